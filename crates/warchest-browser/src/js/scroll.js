// One pass of the scroll behaviour: down a step at a time (80 % of the
// viewport) to the end of the page, so that lazy loading (loading=lazy,
// IntersectionObserver, "load more on scroll", throttled scroll handlers)
// sees every part of it; each step waits two frames and at least 100 ms.
// Stops at the end or after MAX_MS. The caller then waits for network
// idle and runs another pass while the page grew (Browsertrix's autoscroll
// ends when the height stops growing), then scrolls back to the top.
(async (maxMs) => {
  const start = Date.now();
  const step = () => new Promise((r) => {
    const t0 = Date.now();
    let frames = 0;
    const done = () => setTimeout(r, Math.max(0, 100 - (Date.now() - t0)));
    const tick = () => { if (++frames >= 2) done(); else requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    // A page that renders no frame (hidden) still goes on.
    setTimeout(() => { if (frames < 2) { frames = 2; r(); } }, 250);
  });
  const height = () => Math.max(
    document.documentElement ? document.documentElement.scrollHeight : 0,
    document.body ? document.body.scrollHeight : 0);
  let steps = 0, bottom = false;
  while (Date.now() - start < maxMs) {
    if (window.scrollY + window.innerHeight >= height() - 2) { bottom = true; break; }
    window.scrollBy(0, Math.max(100, Math.floor(window.innerHeight * 0.8)));
    steps++;
    await step();
  }
  return { steps, height: height(), bottom };
})(MAX_MS)
