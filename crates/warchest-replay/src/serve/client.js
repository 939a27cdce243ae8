// warchest replay: keeps the URLs a page makes while it runs inside the
// archive. The server rewrites what is in the HTML, CSS and scripts; this
// covers what only exists at run time (fetch, XMLHttpRequest, elements made
// by scripts, history, window.open).
(function () {
  "use strict";
  var c = window.__warchest;
  if (!c || window.__warchestActive) return;
  window.__warchestActive = true;
  var origin = window.location.origin;
  var prefix = c.prefix; // "/{collection}/"
  var ts = c.timestamp;
  var skip = /^\s*(data|blob|javascript|about|mailto|tel|chrome|file):/i;

  // The URL of the archived page: what relative URLs are relative to.
  function pageBase() {
    var b = document.querySelector && document.querySelector("base[href]");
    if (b) {
      var h = b.getAttribute("href") || "";
      var i = h.indexOf("/http");
      if (h.indexOf(prefix) === 0 && i > 0) return h.slice(i + 1);
    }
    return c.url;
  }

  function rw(u, mod) {
    if (u === null || u === undefined) return u;
    var s = String(u);
    if (s === "" || skip.test(s) || s.charAt(0) === "#") return u;
    if (s.indexOf(origin + prefix) === 0 || s.indexOf(prefix) === 0) return u;
    // Made relative to this server (location-based code): the archived
    // site's, not the server's.
    if (s.indexOf(origin + "/") === 0) s = s.slice(origin.length);
    var abs;
    try {
      abs = new URL(s, pageBase()).href;
    } catch (e) {
      return u;
    }
    if (!/^https?:/i.test(abs)) return u;
    return origin + prefix + ts + (mod === undefined ? "mp_" : mod) + "/" + abs;
  }
  window.__warchestRewrite = rw;

  function rwSrcset(v) {
    return String(v)
      .split(",")
      .map(function (p) {
        var t = p.trim().split(/\s+/);
        t[0] = rw(t[0], "im_");
        return t.join(" ");
      })
      .join(", ");
  }

  if (window.fetch) {
    var origFetch = window.fetch;
    window.fetch = function (input, init) {
      if (typeof input === "string" || input instanceof URL) {
        input = rw(String(input));
      } else if (input && input.url) {
        input = new Request(rw(input.url), input);
      }
      return origFetch.call(this, input, init);
    };
  }

  var xhrOpen = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    var args = Array.prototype.slice.call(arguments);
    args[1] = rw(url);
    return xhrOpen.apply(this, args);
  };

  var winOpen = window.open;
  window.open = function (url, name, features) {
    return winOpen.call(this, rw(url, ""), name, features);
  };

  ["pushState", "replaceState"].forEach(function (m) {
    var orig = history[m];
    if (!orig) return;
    history[m] = function (state, title, url) {
      if (url !== undefined && url !== null) url = rw(url, "");
      return orig.call(this, state, title, url);
    };
  });

  if (navigator.sendBeacon) {
    var beacon = navigator.sendBeacon;
    navigator.sendBeacon = function (url, data) {
      return beacon.call(this, rw(url), data);
    };
  }

  // Nothing archived answers these: keep them from reaching the live web.
  window.WebSocket = function () {
    throw new Error("WebSocket is not available in an archived page");
  };
  if (navigator.serviceWorker) {
    navigator.serviceWorker.register = function () {
      return Promise.reject(new Error("service workers are off in replay"));
    };
  }
  ["Worker", "SharedWorker", "EventSource"].forEach(function (name) {
    var Orig = window[name];
    if (!Orig) return;
    window[name] = function (url, opts) {
      return new Orig(rw(url, "js_"), opts);
    };
    window[name].prototype = Orig.prototype;
  });

  var attrMods = {
    src: function (el) {
      var t = el.tagName;
      if (t === "IMG" || t === "SOURCE" || t === "INPUT") return "im_";
      if (t === "SCRIPT") return "js_";
      if (t === "IFRAME" || t === "FRAME") return "if_";
      return "oe_";
    },
    href: function (el) {
      var t = el.tagName;
      if (t === "A" || t === "AREA" || t === "BASE") return "";
      if (t === "LINK") return /stylesheet/i.test(el.rel || "") ? "cs_" : "oe_";
      return "mp_";
    },
    action: function () { return ""; },
    formaction: function () { return ""; },
    poster: function () { return "im_"; },
    data: function (el) { return el.tagName === "OBJECT" ? "oe_" : null; },
  };

  var setAttr = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    var n = String(name).toLowerCase();
    if (n === "srcset") {
      value = rwSrcset(value);
    } else if (n === "integrity") {
      return undefined;
    } else if (attrMods[n]) {
      var m = attrMods[n](this);
      if (m !== null) value = rw(value, m);
    }
    return setAttr.call(this, name, value);
  };

  function hook(proto, prop, mod) {
    if (!proto) return;
    var d = Object.getOwnPropertyDescriptor(proto, prop);
    if (!d || !d.set || !d.configurable) return;
    Object.defineProperty(proto, prop, {
      configurable: true,
      enumerable: d.enumerable,
      get: d.get,
      set: function (v) {
        return d.set.call(this, prop === "srcset" ? rwSrcset(v) : rw(v, mod));
      },
    });
  }
  hook(window.HTMLImageElement && HTMLImageElement.prototype, "src", "im_");
  hook(window.HTMLImageElement && HTMLImageElement.prototype, "srcset", "im_");
  hook(window.HTMLSourceElement && HTMLSourceElement.prototype, "src", "oe_");
  hook(window.HTMLSourceElement && HTMLSourceElement.prototype, "srcset", "im_");
  hook(window.HTMLScriptElement && HTMLScriptElement.prototype, "src", "js_");
  hook(window.HTMLLinkElement && HTMLLinkElement.prototype, "href", "oe_");
  hook(window.HTMLIFrameElement && HTMLIFrameElement.prototype, "src", "if_");
  hook(window.HTMLMediaElement && HTMLMediaElement.prototype, "src", "oe_");
  hook(window.HTMLAnchorElement && HTMLAnchorElement.prototype, "href", "");
  hook(window.HTMLFormElement && HTMLFormElement.prototype, "action", "");
  hook(window.HTMLEmbedElement && HTMLEmbedElement.prototype, "src", "oe_");
  hook(window.HTMLObjectElement && HTMLObjectElement.prototype, "data", "oe_");
})();
