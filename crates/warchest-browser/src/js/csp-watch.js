// QA: remember what the replay's Content-Security-Policy refused (a
// request that tried to leave the archive).
(() => {
  window.__warchestBlocked = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    if (window.__warchestBlocked.length < 1000) window.__warchestBlocked.push(String(e.blockedURI));
  }, true);
})();
