// The rendered text: innerText of the page and of every frame of its
// origin, in document order, at most MAX_CHARS characters.
(() => {
  const parts = [];
  let n = 0;
  const walk = (doc, depth) => {
    if (!doc || depth > 5 || n >= MAX_CHARS) return;
    const t = doc.body ? doc.body.innerText : '';
    if (t) { parts.push(t); n += t.length; }
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let d = null;
      try { d = f.contentDocument; } catch (e) {}
      walk(d, depth + 1);
    }
  };
  walk(document, 0);
  return parts.join('\n').slice(0, MAX_CHARS);
})()
