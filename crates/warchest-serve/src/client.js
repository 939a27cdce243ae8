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

  // Math.random: a sequence seeded by the capture time and the archived
  // URL, the same on every load of the page (as pywb's), so that URLs
  // scripts build with it are the same each time. crypto.getRandomValues
  // is left alone: pages use it for keys and ids that must not repeat, and
  // rarely to build a URL that fuzzy matching would not find anyway.
  (function () {
    var seed = ts + " " + c.url;
    var h = 2166136261;
    for (var i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619) >>> 0;
    var state = h;
    G.Math.random = function random() {
      // mulberry32
      state = (state + 0x6d2b79f5) >>> 0;
      var t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
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

  // Service workers of the archived site. The script comes from the
  // archive under `sw_` (the server puts this client script before it);
  // the scope is the archived one on this page's kind of replay URL, so
  // the worker controls the archived site's pages at this time, as it
  // controlled the site's pages, and nothing else (the server's
  // Service-Worker-Allowed holds it to the script's archived origin).
  var SWC = G.ServiceWorkerContainer && G.ServiceWorkerContainer.prototype;
  if (SWC && SWC.register) {
    var swRegister = SWC.register;
    SWC.register = function (url, opts) {
      var o = {};
      if (opts) Object.keys(opts).forEach(function (k) { o[k] = opts[k]; });
      var script, scope;
      try {
        script = new URL(String(url), pageBase()).href;
        // Without a scope, the script's directory, as the browser does.
        scope = o.scope !== undefined && o.scope !== null
          ? new URL(String(o.scope), pageBase()).href
          : new URL("./", script).href;
      } catch (e) {
        return Promise.reject(e);
      }
      o.scope = rw(scope, pageMod);
      return swRegister.call(this, rw(script, "sw_"), o);
    };
    var swGet = SWC.getRegistration;
    if (swGet) {
      SWC.getRegistration = function (u) {
        return swGet.call(this, u === undefined ? u : rw(u, pageMod));
      };
    }
  }

  // The Cache API (pages and service workers): what is put and looked
  // for is kept at its replay URL.
  function rwInput(input, mod) {
    if (typeof input === "string" || (G.URL && input instanceof URL)) return rw(String(input), mod);
    if (input && input.url) {
      var r = rw(input.url, mod);
      if (r !== input.url) return new Request(r, input);
    }
    return input;
  }
  var CacheP = G.Cache && G.Cache.prototype;
  if (CacheP) {
    ["add", "match", "matchAll", "delete", "keys", "put"].forEach(function (m) {
      var orig = CacheP[m];
      if (!orig) return;
      CacheP[m] = function (req) {
        var args = Array.prototype.slice.call(arguments);
        if (req !== undefined) args[0] = rwInput(req);
        return orig.apply(this, args);
      };
    });
    var addAll = CacheP.addAll;
    if (addAll) {
      CacheP.addAll = function (reqs) {
        return addAll.call(this, Array.prototype.map.call(reqs, function (r) { return rwInput(r); }));
      };
    }
  }
  var CSP = G.CacheStorage && G.CacheStorage.prototype;
  if (CSP && CSP.match) {
    var csMatch = CSP.match;
    CSP.match = function (req, opts) {
      return csMatch.call(this, rwInput(req), opts);
    };
  }
  // A service worker opening or moving its pages.
  if (G.Clients && G.Clients.prototype.openWindow) {
    var openWindow = G.Clients.prototype.openWindow;
    G.Clients.prototype.openWindow = function (u) {
      return openWindow.call(this, rw(u, "mp_"));
    };
  }
  if (G.WindowClient && G.WindowClient.prototype.navigate) {
    var clientNav = G.WindowClient.prototype.navigate;
    G.WindowClient.prototype.navigate = function (u) {
      return clientNav.call(this, rw(u, "mp_"));
    };
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

  // `top` and `parent` as the archived page saw them: replayed windows
  // only, never the UI's page that frames replay (another origin). The
  // server rewrites scripts' `top` to `__warchest_top`; `window.parent`
  // is replaceable, so it is redefined here.
  var realParent = G.parent;
  function replayWindow(w) {
    try {
      return !!w.document;
    } catch (e) {
      return false;
    }
  }
  try {
    def(G, "parent", {
      configurable: true,
      get: function () {
        return realParent && realParent !== G && replayWindow(realParent) ? realParent : G;
      },
    });
  } catch (e) {}
  def(G, "__warchest_top", {
    configurable: true,
    get: function () {
      var w = G;
      for (var i = 0; i < 64; i++) {
        var p;
        try {
          p = w.parent;
        } catch (e) {
          break;
        }
        if (!p || p === w || !replayWindow(p)) break;
        w = p;
      }
      return w;
    },
  });

  // document.cookie: the archived site's cookies, kept in the replay
  // origin's jar under names that say their archived domain and path
  // (`wc~DOMAIN~PATH~NAME`, path `/{coll}/`; the server names archived
  // Set-Cookie headers the same way, docs/serve.md), read back for the
  // archived URL shown. Expiry is taken against the capture-time clock:
  // a date before it deletes, a later one makes a session cookie.
  var cookieDesc = getDesc(Document.prototype, "cookie");
  function cookieEnc(v) {
    return String(v).replace(/[%~;=,"\s\x00-\x1f\x7f]|[^\x00-\x7f]+/g, function (ch) {
      var n = ch.charCodeAt(0);
      if (n < 128) return "%" + (n < 16 ? "0" : "") + n.toString(16).toUpperCase();
      try {
        return encodeURIComponent(ch);
      } catch (e) {
        return "";
      }
    });
  }
  function cookieDec(v) {
    try {
      return decodeURIComponent(v);
    } catch (e) {
      return v;
    }
  }
  function defaultPath(path) {
    var i = path.lastIndexOf("/");
    return i <= 0 ? "/" : path.slice(0, i);
  }
  function pathMatch(path, cp) {
    return path === cp || (path.indexOf(cp) === 0 &&
      (cp.charAt(cp.length - 1) === "/" || path.charAt(cp.length) === "/"));
  }
  if (cookieDesc && cookieDesc.get && cookieDesc.set) {
    try {
      def(document, "cookie", {
        configurable: true,
        get: function () {
          var here = parts();
          var host = here.hostname.toLowerCase();
          var found = [];
          String(cookieDesc.get.call(document)).split(/;\s*/).forEach(function (kv) {
            var eq = kv.indexOf("=");
            var k = eq < 0 ? kv : kv.slice(0, eq);
            var f = k.split("~");
            if (f.length !== 4 || f[0] !== "wc") return;
            var d = cookieDec(f[1]), cp = cookieDec(f[2]);
            var ok = d.charAt(0) === "."
              ? host === d.slice(1) || host.slice(-d.length) === d
              : host === d;
            if (ok && pathMatch(here.pathname, cp)) {
              found.push([cp.length, cookieDec(f[3]) + "=" + (eq < 0 ? "" : kv.slice(eq + 1))]);
            }
          });
          // Longer paths first, as browsers list them.
          found.sort(function (a, b) { return b[0] - a[0]; });
          return found.map(function (x) { return x[1]; }).join("; ");
        },
        set: function (v) {
          var bits = String(v).split(";");
          var nv = bits.shift();
          var eq = nv.indexOf("=");
          if (eq <= 0) return;
          var name = nv.slice(0, eq).trim(), value = nv.slice(eq + 1).trim();
          var here = parts();
          var host = here.hostname.toLowerCase();
          var dom = host, path = defaultPath(here.pathname), gone = false, age = "";
          for (var i = 0; i < bits.length; i++) {
            var a = bits[i], ai = a.indexOf("=");
            var an = (ai < 0 ? a : a.slice(0, ai)).trim().toLowerCase();
            var av = ai < 0 ? "" : a.slice(ai + 1).trim();
            if (an === "domain" && av) {
              var d = av.replace(/^\./, "").toLowerCase();
              // A domain the archived host is not in: the browser would
              // have refused the cookie.
              if (host !== d && host.slice(-d.length - 1) !== "." + d) return;
              dom = "." + d;
            } else if (an === "path" && av.charAt(0) === "/") {
              path = av;
            } else if (an === "max-age" && /^-?\d+$/.test(av)) {
              if (+av <= 0) gone = true;
              else age = "; max-age=" + av;
            } else if (an === "expires") {
              var t = Date.parse(av);
              if (!isNaN(t) && t <= Date.now()) gone = true;
            }
          }
          var real = "wc~" + cookieEnc(dom) + "~" + cookieEnc(path) + "~" + cookieEnc(name);
          cookieDesc.set.call(document, real + "=" + value.replace(/;/g, "") +
            "; path=" + prefix + (gone ? "; max-age=0" : age));
        },
      });
    } catch (e) {}
  }

  // The UI's banner follows this frame: when the UI frames it (its real
  // parent is the UI origin), each document and each history change tell
  // the UI the archived URL and time. The UI trusts messages from the
  // replay origin's frame only.
  function tellUi() {
    if (!c.ui || !realParent || realParent === G || replayWindow(realParent)) return;
    try {
      realParent.postMessage({
        warchest: "location",
        url: archivedUrl(),
        timestamp: ts,
        title: document.title || "",
        record: c.record || "",
      }, c.ui);
    } catch (e) {}
  }
  tellUi();
  G.addEventListener("DOMContentLoaded", tellUi);
  G.addEventListener("popstate", tellUi);
  G.addEventListener("hashchange", tellUi);

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
      var r = orig.call(this, state, title, url);
      tellUi();
      return r;
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
