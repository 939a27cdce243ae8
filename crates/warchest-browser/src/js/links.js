// The links of the rendered DOM (a[href], area[href]) in the page and in
// every frame of its origin (others cannot be read), absolute, http(s)
// only, each once: the first MAX_LINKS, and how many distinct ones were
// found in all (the rest are counted, not returned).
(() => {
  const out = new Set();
  const more = new Set();
  const walk = (doc, depth) => {
    if (!doc || depth > 5) return;
    for (const a of doc.querySelectorAll('a[href], area[href]')) {
      const h = a.href;
      if (typeof h !== 'string' || !/^https?:/i.test(h)) continue;
      const u = h.split('#')[0];
      if (out.has(u)) continue;
      if (out.size < MAX_LINKS) out.add(u); else more.add(u);
    }
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let d = null;
      try { d = f.contentDocument; } catch (e) {}
      walk(d, depth + 1);
    }
  };
  walk(document, 0);
  return { links: Array.from(out), found: out.size + more.size };
})()
