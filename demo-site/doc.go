// Package demosite serves a synthetic records website for exercising the browser agent: a
// deterministic set of records, a second registry that disagrees on a few of them, write routes
// that really change the data, a sign-in wall, a redirect chain, off-site links and a prompt
// injection, plus a separate admin handler that reports mutations and the request log.
//
// It stands outside the layers: the agent reads it like any site, through policy, bridge and
// proxy; the commands embed it for the demo and tests start it on loopback.
//
// Key types: Server (Start: the site and its admin handler), Site (the records, mutations and
// request log), Options, Record and RecordState; PolicyYAML is the default policy for an origin.
package demosite
