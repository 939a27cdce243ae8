// Starts every video and audio element (muted), so that their media is
// requested; returns how many there were.
(() => {
  const all = Array.from(document.querySelectorAll('video, audio'));
  for (const m of all) {
    try {
      m.muted = true;
      if (m.preload === 'none') m.preload = 'auto';
      const p = m.play();
      if (p && p.catch) p.catch(() => {});
    } catch (e) {}
  }
  return all.length;
})()
