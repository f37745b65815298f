// PNG export for canvas views (Plotly plots use Plotly's own camera button in their mode bar).

export function downloadCanvas(canvas, filename) {
  canvas.toBlob((blob) => {
    if (!blob) return;
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = filename.endsWith(".png") ? filename : `${filename}.png`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }, "image/png");
}

// Wire a "PNG" button to a function that returns the canvas to save (drawn fresh at click time).
export function pngButton(button, makeCanvas, filename) {
  button.onclick = () => {
    const c = makeCanvas();
    if (c) downloadCanvas(c, typeof filename === "function" ? filename() : filename);
  };
}
