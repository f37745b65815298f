// The explorer's "Score" tab of the head detail: how the open head's score is made for the selected token
// (POST /api/score, drawn by views/score.js). Its own newest-wins request, so clicking through heads and
// tokens never draws an old answer.

import * as api from "../lib/api.js";
import { showError } from "../lib/dom.js";
import { renderScore } from "../views/score.js";

const scores = api.latest();

// body: {prompt, model, layer, head, index}; el: the view's box; errorEl: the detail's error line.
export async function showScore(el, errorEl, body) {
  const r = await scores.run((signal) => api.score({ ...body, model: body.model || null }, { signal }));
  if (!r) return;
  if (r.error) {
    showError(errorEl, `How this score is made is unavailable: ${r.error.message}`);
    return;
  }
  renderScore(el, r.data);
  showError(errorEl, null);
}
