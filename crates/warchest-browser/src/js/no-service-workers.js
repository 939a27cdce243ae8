// Service workers are blocked during capture (as Browsertrix does by
// default): a worker would answer the page's requests from its own cache
// or fetch them outside the page's view.
(() => {
  try {
    if (navigator.serviceWorker) {
      const refuse = () => Promise.reject(new DOMException('service workers are blocked during capture', 'SecurityError'));
      Object.defineProperty(navigator.serviceWorker, 'register', { value: refuse, configurable: false });
    }
  } catch (e) {}
})();
