// Scrolls to the end of the page, a step at a time, so that lazy loading
// (loading=lazy, IntersectionObserver, "load more on scroll") is
// triggered; stops when the height has not grown for three looks at the
// bottom, or after MAX_MS. Then back to the top.
(async (maxMs) => {
  const start = Date.now();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const height = () => Math.max(
    document.documentElement ? document.documentElement.scrollHeight : 0,
    document.body ? document.body.scrollHeight : 0);
  let steps = 0, same = 0, last = -1, ended = false;
  while (Date.now() - start < maxMs) {
    window.scrollBy(0, Math.max(100, Math.floor(window.innerHeight * 0.8)));
    steps++;
    await sleep(120);
    const h = height();
    if (window.scrollY + window.innerHeight >= h - 2) {
      if (h === last) {
        if (++same >= 3) { ended = true; break; }
      } else {
        same = 0;
      }
      last = h;
      await sleep(250);
    }
  }
  window.scrollTo(0, 0);
  return { steps, height: height(), ended };
})(MAX_MS)
