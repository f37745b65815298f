// One colour scale for every attention picture: Viridis (perceptually uniform, readable with the
// common colour-vision deficiencies, and in greyscale), always on a fixed 0..1 range so the same colour
// means the same probability in every thumbnail, heatmap and export.

// Plotly's own Viridis stops, so canvas thumbnails and Plotly heatmaps agree pixel for pixel.
export const VIRIDIS = [
  [0, "#440154"], [0.06274509803921569, "#48186a"], [0.12549019607843137, "#472d7b"],
  [0.18823529411764706, "#424086"], [0.25098039215686274, "#3b528b"], [0.3137254901960784, "#33638d"],
  [0.3764705882352941, "#2c728e"], [0.4392156862745098, "#26828e"], [0.5019607843137255, "#21918c"],
  [0.5647058823529412, "#1fa088"], [0.6274509803921569, "#28ae80"], [0.6901960784313725, "#3fbc73"],
  [0.7529411764705882, "#5ec962"], [0.8156862745098039, "#84d44b"], [0.8784313725490196, "#addc30"],
  [0.9411764705882353, "#d8e219"], [1, "#fde725"],
];

// Okabe-Ito colours for categories (attention vs MLP): distinguishable with colour-vision deficiencies.
export const CATEGORY = { attention: "#0072B2", mlp: "#E69F00", line: "#000000", chosen: "#D55E00" };

// Okabe-Ito colours per model, readable with colour-vision deficiencies; the live model stands out.
export const MODEL_COLOR = {
  live: "#D55E00",
  "gpt2-small": "#7f7f7f",
  "llama-2-7b": "#0072B2",
  "llama-2-70b": "#009E73",
  "llama-3-8b": "#CC79A7",
};

const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));

// 256-entry RGBA lookup table indexed by the u8 attention byte (value = round(p * 255)).
export const LUT = (() => {
  const lut = new Uint8ClampedArray(256 * 4);
  for (let b = 0; b < 256; b++) {
    const v = b / 255;
    let k = 0;
    while (k < VIRIDIS.length - 2 && v > VIRIDIS[k + 1][0]) k++;
    const [x0, c0] = VIRIDIS[k];
    const [x1, c1] = VIRIDIS[k + 1];
    const t = (v - x0) / (x1 - x0);
    const a = hex(c0);
    const c = hex(c1);
    for (let ch = 0; ch < 3; ch++) lut[b * 4 + ch] = Math.round(a[ch] + (c[ch] - a[ch]) * t);
    lut[b * 4 + 3] = 255;
  }
  return lut;
})();
