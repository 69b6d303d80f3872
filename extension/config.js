// config.js: the server the side panel talks to until another is set in the options. It is the
// extension's one host permission (manifest.json).
export const DEFAULT_SERVER = "http://127.0.0.1:8080";
