// A figure drawn for the book's column is small on a phone: tapping (or clicking) it opens the
// image alone, full size, in a new tab, where it can be zoomed. On a narrow screen its caption
// says so (book/_static/paththeory.css).
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll(".bd-article .cell_output img, .bd-article figure img")) {
    img.classList.add("pt-zoomable");
    img.title = img.title || "Open the figure full size";
    img.addEventListener("click", () => window.open(img.src, "_blank"));
  }
});

// A wide display equation or table scrolls sideways in its own box. Phones hide the scrollbar,
// so each box that scrolls is marked (pt-scrolls), and which of its edges are reached (pt-scrolled:
// moved from the left edge; pt-at-end: at the right edge), for the CSS to draw a shadow where
// more lies beyond. Equations are marked once MathJax has typeset them, and again on resizing.
(() => {
  const SELECTOR = '.bd-article mjx-container[display="true"], .bd-article .pst-scrollable-table-container';
  const update = (box) => {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("pt-scrolls", scrolls);
    box.classList.toggle("pt-scrolled", scrolls && box.scrollLeft > 1);
    box.classList.toggle("pt-at-end", scrolls && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
  };
  const mark = () => {
    for (const box of document.querySelectorAll(SELECTOR)) {
      if (!box.dataset.ptWatched) {
        box.dataset.ptWatched = "1";
        box.addEventListener("scroll", () => update(box), { passive: true });
      }
      update(box);
    }
  };
  const afterMathJax = () => {
    const startup = window.MathJax && window.MathJax.startup;
    if (startup && startup.promise) startup.promise.then(mark);
    mark();
  };
  window.addEventListener("load", () => { afterMathJax(); setTimeout(mark, 1500); });
  window.addEventListener("resize", mark);
})();
