// Figures on a phone. A figure is drawn for the book's column (about 760 px at a 1400 px window); shrunk to a
// phone's column its type would be 5-6 px. Each figure image therefore sits in its own box (pt-figure-scroll,
// inside pt-figure-frame), and the image carries its natural width (--pt-natural-width): on a narrow screen
// book/_static/paththeory.css shows it at no less than 0.7 of that width (its 9 pt type at 8.4 px and more),
// and the box scrolls sideways, with a shadow at the edge beyond which more of the figure lies (marked below).
// Tapping (or clicking) a figure opens it at full size over the page, in the same tab; the close button,
// a tap beside it or Escape returns to the same place.
(() => {
  const FIGURES = ".bd-article .cell_output img, .bd-article figure img";

  const openFigure = (img) => {
    const overlay = document.createElement("div");
    overlay.className = "pt-lightbox";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", img.alt ? `Figure at full size: ${img.alt}` : "Figure at full size");
    const close = document.createElement("button");
    close.type = "button";
    close.className = "pt-lightbox-close";
    close.setAttribute("aria-label", "Close the full-size figure");
    close.textContent = "\u00d7";
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    big.className = "pt-lightbox-image";
    overlay.append(close, big);
    const opener = document.activeElement;
    const done = () => {
      overlay.remove();
      document.documentElement.classList.remove("pt-lightbox-open");
      document.removeEventListener("keydown", onKey);
      if (opener && opener.focus) opener.focus();
    };
    const onKey = (event) => { if (event.key === "Escape") done(); };
    close.addEventListener("click", done);
    overlay.addEventListener("click", (event) => { if (event.target === overlay) done(); });
    document.addEventListener("keydown", onKey);
    document.documentElement.classList.add("pt-lightbox-open");
    document.body.append(overlay);
    close.focus();
  };

  const setNaturalWidth = (img) => {
    if (img.naturalWidth) img.style.setProperty("--pt-natural-width", `${img.naturalWidth}px`);
  };

  document.addEventListener("DOMContentLoaded", () => {
    for (const img of document.querySelectorAll(FIGURES)) {
      if (img.closest(".pt-figure-scroll")) continue;
      const frame = document.createElement("div");
      frame.className = "pt-figure-frame";
      const box = document.createElement("div");
      box.className = "pt-figure-scroll";
      img.parentNode.insertBefore(frame, img);
      frame.append(box);
      box.append(img);
      img.classList.add("pt-zoomable");
      img.title = img.title || "Open the figure at full size";
      img.tabIndex = 0;
      img.setAttribute("role", "button");
      img.addEventListener("click", () => openFigure(img));
      img.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); openFigure(img); }
      });
      if (img.complete) setNaturalWidth(img);
      img.addEventListener("load", () => { setNaturalWidth(img); window.dispatchEvent(new Event("pt-layout")); });
    }
  });
})();

// A wide display equation, table, code block or figure scrolls sideways in its own box. Phones hide the
// scrollbar, so each box that scrolls is marked (pt-scrolls), and which of its edges are reached (pt-scrolled:
// moved from the left edge; pt-at-end: at the right edge), for the CSS to draw a shadow where more lies
// beyond. A figure's marks go on its frame (an image hides a shadow drawn inside its own box). Equations are
// marked once MathJax has typeset them, and again on resizing, after a figure loads, and after a solution
// or an explorer's panel is shown.
(() => {
  const SELECTOR = [
    '.bd-article mjx-container[display="true"]',
    ".bd-article .pst-scrollable-table-container",
    ".bd-article div.highlight > pre",
    ".bd-article .pt-figure-scroll",
  ].join(", ");
  const update = (box) => {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    const target = box.classList.contains("pt-figure-scroll") ? box.parentElement : box;
    target.classList.toggle("pt-scrolls", scrolls);
    target.classList.toggle("pt-scrolled", scrolls && box.scrollLeft > 1);
    target.classList.toggle("pt-at-end", scrolls && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
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
  window.addEventListener("pt-layout", mark);
  // A solution or dropdown opened, an explorer's slider moved: what is shown changed size.
  document.addEventListener("click", () => setTimeout(mark, 50));
  document.addEventListener("input", () => setTimeout(mark, 50));
  document.addEventListener("change", () => setTimeout(mark, 50));
})();
