// options.js: the server URL the side panel talks to, kept in chrome.storage.local.
import { DEFAULT_SERVER } from "./config.js";

const $ = (id) => document.getElementById(id);

// normalize returns the origin of a server URL, or throws with a message for a person.
function normalize(raw) {
  let u;
  try {
    u = new URL(raw.trim());
  } catch (e) {
    throw new Error("Not a URL.");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("Use an http or https URL.");
  if (u.username || u.password) throw new Error("No user name or password in the URL.");
  if ((u.pathname !== "/" && u.pathname !== "") || u.search || u.hash) throw new Error("Give the server's origin only, e.g. http://127.0.0.1:8080.");
  return u.origin;
}

async function load() {
  const { server } = await chrome.storage.local.get({ server: DEFAULT_SERVER });
  $("server-url").value = server;
  $("allow-cmd").textContent = "browser-agent serve --allow-origin " + location.origin;
}

$("form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const st = $("status");
  try {
    const server = normalize($("server-url").value);
    await chrome.storage.local.set({ server });
    $("server-url").value = server;
    st.textContent = "Saved: " + server;
    st.className = "ok";
  } catch (err) {
    st.textContent = err.message;
    st.className = "error";
  }
});

load();
