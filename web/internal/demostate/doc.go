// Package demostate keeps the live demo's limits across restarts in the audit database: the salt
// that keys visitor hashes (no address is stored), each visitor's runs of the window, and the runs
// waiting in the queue (tables demo_salt, demo_visits and demo_queue). It is web's: the audit
// store offers only its database (audit.SQL, in the store's dialect for SQLite and PostgreSQL)
// and creates only its own tables; Open creates the demo's when missing (schema.go). Databases
// from before the demo created its tables have them from audit's migrations (SQLite schema 4,
// PostgreSQL version 1), with the same definitions, and keep them and their rows.
//
// It sits on audit and policy; web alone imports it.
//
// Key types: Log (Open; Salt, AddVisit, VisitsSince, Enqueue, Dequeue, Queued), Visit, QueuedRun.
package demostate
