// background.js: the toolbar button opens the side panel. The extension does nothing else in the
// background: no content scripts, no access to the pages you visit.
chrome.runtime.onInstalled.addListener(() => {
  chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch(() => {});
});
