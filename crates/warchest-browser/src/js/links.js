// The links of the rendered DOM (a[href], area[href]) in the page and in
// every frame of its origin (others cannot be read), absolute, http(s)
// only, each once, at most MAX_LINKS.
(() => {
  const out = new Set();
  const walk = (doc, depth) => {
    if (!doc || depth > 5) return;
    for (const a of doc.querySelectorAll('a[href], area[href]')) {
      if (out.size >= MAX_LINKS) return;
      const h = a.href;
      if (typeof h === 'string' && /^https?:/i.test(h)) out.add(h.split('#')[0]);
    }
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let d = null;
      try { d = f.contentDocument; } catch (e) {}
      walk(d, depth + 1);
    }
  };
  walk(document, 0);
  return Array.from(out);
})()
