// warchest replay: keeps what a page's scripts request while it runs inside
// the archive, at the page's capture time. The server rewrites what is in
// the HTML, CSS and scripts; this covers what only exists at run time
// (docs/serve.md, "Client side"). Every URL it makes is root-relative on
// the replay origin: /{coll}/{timestamp}{modifier}/{archived URL}.
// It runs in pages and, loaded first by a prelude, in workers.
(function (G) {
  "use strict";
  var c = G.__warchest;
  if (!c || G.__warchestActive) return;
  G.__warchestActive = true;
  var hasDoc = typeof document !== "undefined" && typeof Element !== "undefined";
  var realLoc = G.location;
  var origin = realLoc.origin;
  var prefix = c.prefix; // "/{collection}/"
  var ts = c.timestamp;
  var skip = /^\s*(data|blob|javascript|about|mailto|tel|chrome|file|urn):/i;
  var replayPath = new RegExp(
    "^" + prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "([0-9]{1,14})([a-z]{2}_)?/(.*)$"
  );
  var def = Object.defineProperty;
  var getDesc = Object.getOwnPropertyDescriptor;

  // A replay URL's parts, or null.
  function parseReplay(u) {
    var s = String(u);
    if (s.indexOf(origin) === 0) s = s.slice(origin.length);
    var m = replayPath.exec(s);
    if (!m) return null;
    var url = m[3].replace(/^(https?:)\/(?!\/)/i, "$1//");
    return { ts: m[1], mod: m[2] || "", url: url };
  }

  // The modifier of this document (pushState keeps it: a framed page stays
  // framed).
  var here = parseReplay(realLoc.pathname + realLoc.search);
  var pageMod = here ? here.mod : "mp_";

  // The archived URL this document stands for now (after pushState too).
  function archivedUrl() {
    var p = parseReplay(realLoc.pathname + realLoc.search);
    var u = p ? p.url : c.url;
    return realLoc.hash && u.indexOf("#") < 0 ? u + realLoc.hash : u;
  }

  // What relative URLs are relative to: the page's <base>, else its URL.
  function pageBase() {
    if (hasDoc) {
      var b = document.querySelector && document.querySelector("base[href]");
      if (b) {
        var p = parseReplay(b.getAttribute("href") || "");
        if (p) return p.url;
      }
    }
    return archivedUrl();
  }

  function rw(u, mod) {
    if (u === null || u === undefined) return u;
    var s = String(u);
    if (s === "" || skip.test(s) || s.charAt(0) === "#") return u;
    if (parseReplay(s)) return u;
    // Made from this server's location (code that reads location.host):
    // the archived site's, not the server's.
    if (s.indexOf(origin + "/") === 0) s = s.slice(origin.length);
    var abs;
    try {
      abs = new URL(s, pageBase()).href;
    } catch (e) {
      return u;
    }
    if (!/^https?:/i.test(abs)) return u;
    // Root-relative; absolute in a worker, whose base is its blob: URL.
    return (hasDoc ? "" : origin) + prefix + ts + (mod === undefined ? "mp_" : mod) + "/" + abs;
  }

  // A replay URL back to the archived one (other URLs as they are).
  function unrw(u) {
    var p = parseReplay(u);
    return p ? p.url : u;
  }

  function rwSrcset(v) {
    return String(v)
      .split(/,(?=\s*\S)/)
      .map(function (p) {
        var t = p.trim().split(/\s+/);
        t[0] = rw(t[0], "im_");
        return t.join(" ");
      })
      .join(", ");
  }

  function rwCss(text) {
    if (text === null || text === undefined) return text;
    return String(text)
      .replace(/(url\(\s*)(["']?)([^"')]+)\2(\s*\))/gi, function (m, a, q, u, b) {
        return a + q + rw(u.trim(), "im_") + q + b;
      })
      .replace(/(@import\s+)(["'])([^"']+)\2/gi, function (m, a, q, u) {
        return a + q + rw(u, "cs_") + q;
      });
  }

  // The modifier for an attribute of an element named `tag` (upper case),
  // null when the attribute holds no URL there.
  function modFor(tag, attr, rel) {
    switch (attr) {
      case "src":
        if (tag === "IMG" || tag === "SOURCE" || tag === "INPUT") return "im_";
        if (tag === "SCRIPT") return "js_";
        if (tag === "IFRAME" || tag === "FRAME") return "if_";
        return "oe_";
      case "href":
        if (tag === "A" || tag === "AREA" || tag === "BASE") return "";
        if (tag === "LINK") {
          if (/stylesheet/i.test(rel || "")) return "cs_";
          if (/icon/i.test(rel || "")) return "im_";
          if (/modulepreload/i.test(rel || "")) return "js_";
          return "oe_";
        }
        return tag === "IMAGE" || tag === "USE" ? "im_" : null;
      case "action":
      case "formaction":
        return "";
      case "poster":
      case "background":
        return "im_";
      case "data":
        return tag === "OBJECT" ? "oe_" : null;
      default:
        return null;
    }
  }

  function rwAttr(tag, name, value, rel) {
    var n = String(name).toLowerCase();
    if (n === "srcset" || n === "imagesrcset") return rwSrcset(value);
    if (n === "style") return rwCss(value);
    var m = modFor(tag, n, rel);
    return m === null ? value : rw(value, m);
  }

  // HTML given to innerHTML, document.write and the like: the URLs of its
  // tags and its <style> elements.
  function rwHtml(html) {
    if (typeof html !== "string" || html.indexOf("<") < 0) return html;
    return html
      .replace(/(<style\b[^>]*>)([\s\S]*?)(<\/style>)/gi, function (m, a, css, b) {
        return a + rwCss(css) + b;
      })
      .replace(/<([a-zA-Z][a-zA-Z0-9-]*)(\s[^>]*)?>/g, function (m, tag, attrs) {
        if (!attrs) return m;
        var T = tag.toUpperCase();
        var relM = /\srel\s*=\s*["']?([^"'\s>]+)/i.exec(attrs);
        var rel = relM ? relM[1] : "";
        var out = attrs.replace(
          /(\s)([a-zA-Z-]+)(\s*=\s*)("[^"]*"|'[^']*'|[^\s"'>]+)/g,
          function (am, sp, name, eq, val) {
            var n = name.toLowerCase();
            if (n === "integrity") return "";
            var q = val.charAt(0) === '"' || val.charAt(0) === "'" ? val.charAt(0) : "";
            var raw = q ? val.slice(1, -1) : val;
            var plain = raw.replace(/&amp;/gi, "&");
            var nv = rwAttr(T, n, plain, rel);
            if (nv === plain) return am;
            return sp + name + eq + '"' + String(nv).replace(/&/g, "&amp;").replace(/"/g, "&quot;") + '"';
          }
        );
        return "<" + tag + out + ">";
      });
  }

  // Time: the clock starts at the capture time when the page loads, as
  // pywb's does, so pages that show or pick by today's date show the day
  // they were archived. Differences between readings stay real.
  (function () {
    var RealDate = G.Date;
    var t = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec((ts + "0000000000").slice(0, 14));
    if (!t || typeof Reflect === "undefined") return;
    var capture = RealDate.UTC(+t[1], +t[2] - 1, +t[3] || 1, +t[4], +t[5], +t[6]);
    var realNow = RealDate.now;
    var offset = capture - realNow.call(RealDate);
    function now() {
      return realNow.call(RealDate) + offset;
    }
    function WDate() {
      if (!new.target) return new RealDate(now()).toString();
      var args = arguments.length ? Array.prototype.slice.call(arguments) : [now()];
      return Reflect.construct(RealDate, args, new.target);
    }
    WDate.prototype = RealDate.prototype;
    WDate.now = now;
    WDate.UTC = RealDate.UTC;
    WDate.parse = RealDate.parse;
    G.Date = WDate;
  })();

  G.__warchestRewrite = rw;
  G.__warchestUnrewrite = unrw;

  // Requests: fetch, XMLHttpRequest, beacons, event streams.
  if (G.fetch) {
    var origFetch = G.fetch;
    G.fetch = function (input, init) {
      if (typeof input === "string" || (G.URL && input instanceof URL)) {
        input = rw(String(input));
      } else if (input && input.url) {
        var r = rw(input.url);
        if (r !== input.url) input = new Request(r, input);
      }
      return origFetch.call(this, input, init);
    };
  }
  if (G.XMLHttpRequest) {
    var xhrOpen = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function (method, url) {
      var args = Array.prototype.slice.call(arguments);
      args[1] = rw(url);
      return xhrOpen.apply(this, args);
    };
  }
  if (G.navigator && navigator.sendBeacon) {
    var beacon = navigator.sendBeacon;
    navigator.sendBeacon = function (url, data) {
      return beacon.call(this, rw(url), data);
    };
  }
  if (G.EventSource) {
    var ES = G.EventSource;
    G.EventSource = function (url, opts) {
      return new ES(rw(url), opts);
    };
    G.EventSource.prototype = ES.prototype;
  }
  if (G.importScripts) {
    var imp = G.importScripts;
    G.importScripts = function () {
      return imp.apply(this, Array.prototype.map.call(arguments, function (u) {
        return rw(u, "js_");
      }));
    };
  }

  // Nothing archived answers these: keep them from reaching the live web.
  G.WebSocket = function () {
    throw new Error("WebSocket is not available in an archived page");
  };
  if (G.navigator && navigator.serviceWorker) {
    try {
      navigator.serviceWorker.register = function () {
        return Promise.reject(new Error("service workers are off in replay"));
      };
    } catch (e) {}
  }

  // Workers: their script runs after the same client script, with its own
  // archived URL as base, from a small prelude.
  function workerUrl(url, opts) {
    var target = rw(url, "js_");
    var cfg = JSON.stringify({
      prefix: prefix,
      timestamp: ts,
      url: unrw(target),
      collection: c.collection,
    });
    var client = JSON.stringify(origin + "/_/client.js");
    var abs = JSON.stringify(origin + target);
    var body =
      "self.__warchest=" + cfg + ";" +
      (opts && opts.type === "module"
        ? "import(" + client + ").then(function(){return import(" + abs + ");});"
        : "importScripts(" + client + "," + abs + ");");
    return URL.createObjectURL(new Blob([body], { type: "text/javascript" }));
  }
  ["Worker", "SharedWorker"].forEach(function (name) {
    var Orig = G[name];
    if (!Orig) return;
    G[name] = function (url, opts) {
      var u = String(url);
      if (/^(blob|data):/i.test(u)) return new Orig(url, opts);
      return new Orig(workerUrl(u, opts), opts);
    };
    G[name].prototype = Orig.prototype;
  });

  // `location` as the archived page's. Scripts' `location`,
  // `window.location` and `document.location` are rewritten by the server
  // to `__warchest_location` (docs/serve.md); reading it gives the archived
  // URL, assigning it navigates inside the archive.
  function navigate(u, replace) {
    var t = rw(u, pageMod);
    if (replace) realLoc.replace(t);
    else realLoc.assign(t);
  }
  function parts() {
    try {
      return new URL(archivedUrl());
    } catch (e) {
      return new URL(realLoc.href);
    }
  }
  var locProxy = {};
  ["href", "protocol", "host", "hostname", "port", "pathname", "search", "hash", "origin"].forEach(
    function (k) {
      def(locProxy, k, {
        enumerable: true,
        get: function () {
          return k === "href" ? archivedUrl() : parts()[k];
        },
        set: function (v) {
          if (k === "hash") {
            realLoc.hash = v;
            return;
          }
          if (k === "href") return navigate(v);
          var p = parts();
          p[k] = v;
          navigate(p.href);
        },
      });
    }
  );
  locProxy.assign = function (u) { navigate(u); };
  locProxy.replace = function (u) { navigate(u, true); };
  locProxy.reload = function () { realLoc.reload(); };
  locProxy.toString = function () { return archivedUrl(); };
  locProxy.valueOf = function () { return locProxy; };
  var locAccessor = {
    configurable: true,
    get: function () { return locProxy; },
    set: function (v) { navigate(v); },
  };
  def(G, "__warchest_location", locAccessor);

  if (!hasDoc) return;

  def(Document.prototype, "__warchest_location", locAccessor);
  var docProps = {
    URL: function () { return archivedUrl(); },
    documentURI: function () { return archivedUrl(); },
    domain: function () { return parts().hostname; },
    referrer: function () {
      var r = realDesc("referrer").get.call(document);
      return r ? unrw(r) : r;
    },
  };
  function realDesc(p) {
    return getDesc(Document.prototype, p) || { get: function () { return ""; } };
  }
  Object.keys(docProps).forEach(function (p) {
    try {
      def(document, p, {
        configurable: true,
        get: docProps[p],
        set: p === "domain" ? function () {} : undefined,
      });
    } catch (e) {}
  });

  // postMessage: the archived site names its own origin; both sides are on
  // the replay origin here.
  var post = G.postMessage;
  G.postMessage = function (msg, target, transfer) {
    if (typeof target === "string" && target !== "*" && target !== "/") target = origin;
    else if (target && typeof target === "object" && target.targetOrigin &&
      target.targetOrigin !== "*" && target.targetOrigin !== "/") target.targetOrigin = origin;
    return transfer === undefined ? post.call(this, msg, target) : post.call(this, msg, target, transfer);
  };
  var evOrigin = getDesc(MessageEvent.prototype, "origin");
  if (evOrigin && evOrigin.get) {
    def(MessageEvent.prototype, "origin", {
      configurable: true,
      get: function () {
        var o = evOrigin.get.call(this);
        if (o !== origin) return o;
        try {
          var src = this.source && this.source.__warchest_location;
          return (src || locProxy).origin;
        } catch (e) {
          return locProxy.origin;
        }
      },
    });
  }

  var winOpen = G.open;
  G.open = function (url, name, features) {
    return winOpen.call(this, url ? rw(url, "") : url, name, features);
  };

  ["pushState", "replaceState"].forEach(function (m) {
    var orig = history[m];
    if (!orig) return;
    history[m] = function (state, title, url) {
      if (url !== undefined && url !== null) url = rw(url, pageMod);
      return orig.call(this, state, title, url);
    };
  });

  // Attributes and the properties that reflect them.
  var setAttr = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    var n = String(name).toLowerCase();
    if (n === "integrity") return undefined;
    return setAttr.call(this, name, rwAttr(this.tagName, n, value, this.getAttribute("rel")));
  };
  var setAttrNS = Element.prototype.setAttributeNS;
  Element.prototype.setAttributeNS = function (ns, name, value) {
    var local = String(name).split(":").pop().toLowerCase();
    return setAttrNS.call(this, ns, name, rwAttr(this.tagName.toUpperCase(), local, value, null));
  };

  function hook(proto, prop, change) {
    if (!proto) return;
    var d = getDesc(proto, prop);
    if (!d || !d.set || !d.configurable) return;
    def(proto, prop, {
      configurable: true,
      enumerable: d.enumerable,
      get: d.get,
      set: function (v) {
        return d.set.call(this, change(v, this));
      },
    });
  }
  function urlProp(proto, prop, mod) {
    hook(proto, prop, function (v) { return rw(v, mod); });
  }
  var P = function (name) { return G[name] && G[name].prototype; };
  urlProp(P("HTMLImageElement"), "src", "im_");
  urlProp(P("HTMLInputElement"), "src", "im_");
  urlProp(P("HTMLSourceElement"), "src", "oe_");
  urlProp(P("HTMLScriptElement"), "src", "js_");
  urlProp(P("HTMLIFrameElement"), "src", "if_");
  urlProp(P("HTMLFrameElement"), "src", "if_");
  urlProp(P("HTMLMediaElement"), "src", "oe_");
  urlProp(P("HTMLTrackElement"), "src", "oe_");
  urlProp(P("HTMLEmbedElement"), "src", "oe_");
  urlProp(P("HTMLObjectElement"), "data", "oe_");
  urlProp(P("HTMLAnchorElement"), "href", "");
  urlProp(P("HTMLAreaElement"), "href", "");
  urlProp(P("HTMLFormElement"), "action", "");
  urlProp(P("HTMLButtonElement"), "formAction", "");
  urlProp(P("HTMLVideoElement"), "poster", "im_");
  hook(P("HTMLLinkElement"), "href", function (v, el) {
    return rw(v, modFor("LINK", "href", el.getAttribute("rel")));
  });
  [P("HTMLImageElement"), P("HTMLSourceElement"), P("HTMLLinkElement")].forEach(function (p) {
    hook(p, "srcset", rwSrcset);
    hook(p, "imageSrcset", rwSrcset);
  });

  // CSS set from script: style properties, cssText, stylesheets' rules,
  // <style> text.
  var CSD = P("CSSStyleDeclaration");
  hook(CSD, "cssText", rwCss);
  if (CSD) {
    var setProp = CSD.setProperty;
    CSD.setProperty = function (name, value, prio) {
      return setProp.call(this, name, rwCss(value), prio);
    };
    [
      "background", "backgroundImage", "borderImage", "borderImageSource", "listStyle",
      "listStyleImage", "content", "cursor", "mask", "maskImage", "webkitMaskImage",
      "shapeOutside", "filter",
    ].forEach(function (p) {
      hook(CSD, p, rwCss);
    });
  }
  var sheet = P("CSSStyleSheet");
  if (sheet) {
    var insertRule = sheet.insertRule;
    sheet.insertRule = function (rule, i) {
      return insertRule.call(this, rwCss(rule), i);
    };
    if (sheet.replace) {
      var replace = sheet.replace;
      sheet.replace = function (t) { return replace.call(this, rwCss(t)); };
    }
    if (sheet.replaceSync) {
      var replaceSync = sheet.replaceSync;
      sheet.replaceSync = function (t) { return replaceSync.call(this, rwCss(t)); };
    }
  }
  hook(P("Node"), "textContent", function (v, el) {
    return el.nodeName === "STYLE" ? rwCss(v) : v;
  });
  hook(P("HTMLElement"), "innerText", function (v, el) {
    return el.nodeName === "STYLE" ? rwCss(v) : v;
  });

  // HTML inserted by script.
  hook(P("Element"), "innerHTML", function (v, el) {
    return el.nodeName === "STYLE" ? rwCss(v) : rwHtml(v);
  });
  hook(P("ShadowRoot"), "innerHTML", rwHtml);
  hook(P("Element"), "outerHTML", rwHtml);
  var adj = Element.prototype.insertAdjacentHTML;
  Element.prototype.insertAdjacentHTML = function (pos, html) {
    return adj.call(this, pos, rwHtml(html));
  };
  var frag = Range.prototype.createContextualFragment;
  Range.prototype.createContextualFragment = function (html) {
    return frag.call(this, rwHtml(html));
  };
  ["write", "writeln"].forEach(function (m) {
    var orig = Document.prototype[m];
    Document.prototype[m] = function () {
      return orig.apply(this, Array.prototype.map.call(arguments, rwHtml));
    };
  });

  // What the hooks above cannot see (a URL attribute changed through an
  // Attr node or the like) is caught when it lands in the DOM.
  var attrs = ["src", "href", "srcset", "style", "poster", "action", "data"];
  function fixEl(el) {
    if (!el || el.nodeType !== 1) return;
    for (var i = 0; i < attrs.length; i++) {
      var a = attrs[i];
      var v = el.getAttribute(a);
      if (v === null) continue;
      var n = rwAttr(el.tagName, a, v, el.getAttribute("rel"));
      if (n !== v) setAttr.call(el, a, n);
    }
  }
  if (G.MutationObserver) {
    new MutationObserver(function (recs) {
      recs.forEach(function (r) {
        if (r.type === "attributes") fixEl(r.target);
        else
          Array.prototype.forEach.call(r.addedNodes, function (n) {
            fixEl(n);
            if (n.querySelectorAll) Array.prototype.forEach.call(n.querySelectorAll("[src],[href],[srcset],[style]"), fixEl);
          });
      });
    }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: attrs });
  }
})(typeof self !== "undefined" ? self : this);
