// A figure drawn for the book's column is small on a phone: tapping (or clicking) it opens the
// image alone, full size, in a new tab, where it can be zoomed.
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll(".bd-article .cell_output img, .bd-article figure img")) {
    img.classList.add("pt-zoomable");
    img.title = img.title || "Open the figure full size";
    img.addEventListener("click", () => window.open(img.src, "_blank"));
  }
});
