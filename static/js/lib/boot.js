// Runs synchronously in <head>, before the first paint, so presenter mode never flashes on load.
// (A classic script, not a module: modules are deferred and would run after the first paint.)
try {
  if (window.localStorage.getItem("atlas.presenter") === "1") {
    document.documentElement.classList.add("presenter");
  }
} catch (e) {
  // Storage can be disabled (privacy settings); the page simply starts in normal mode.
}
