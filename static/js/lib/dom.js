// Small DOM helpers every page and view shares. Text only ever goes in through textContent: token
// text is user input and must never be parsed as HTML.

// <tag class="cls">text</tag>
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// The element with the given id, or a clear failure if the template and the script disagree.
export function byId(id) {
  const e = document.getElementById(id);
  if (!e) throw new Error(`missing #${id} in the page`);
  return e;
}

// An error box shows its message, or hides when there is none.
export function showError(box, message) {
  box.textContent = message || "";
  box.hidden = !message;
}

// Size a canvas to w x h CSS pixels at the screen's pixel density and return its 2D context, cleared and
// scaled so that drawing code works in CSS pixels (the backing store is only reallocated on a change).
export function hiDpiContext(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  const pw = Math.round(w * dpr);
  const ph = Math.round(h * dpr);
  if (canvas.width !== pw || canvas.height !== ph) {
    canvas.width = pw;
    canvas.height = ph;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return ctx;
}

// fn, called once the calls have paused for `ms`.
export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// Runs fn once, the first time el comes into view: for panels whose data is expensive the first time,
// so a part of the page nobody scrolls to costs the server nothing.
export function onFirstSight(el, fn) {
  new IntersectionObserver((entries, observer) => {
    if (entries.some((e) => e.isIntersecting)) {
      observer.disconnect();
      fn();
    }
  }).observe(el);
}
