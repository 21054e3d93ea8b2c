"""The page's look: a theme with local fonts only (no outside fetch) and a little CSS."""

from __future__ import annotations

from typing import Any

LOCAL_FONTS = ["ui-sans-serif", "system-ui", "Segoe UI", "Roboto", "Helvetica Neue", "Arial",
               "sans-serif"]
LOCAL_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]

CSS = """
.tw-header h1 { margin-bottom: 0.1rem; }
.tw-header p { margin-top: 0; color: var(--body-text-color-subdued); }
.tw-note, .tw-note p { font-size: var(--text-sm); color: var(--body-text-color-subdued); }
.tw-personas ul { margin-top: 0; padding-left: 1.1rem; }
.tw-personas li { font-size: var(--text-sm); margin-bottom: 0.35rem; }
.tw-actions { flex-wrap: wrap; gap: var(--spacing-sm); }
.tw-actions button { min-width: 0; white-space: nowrap; flex: 1 1 auto; }
#char-count .tw-count { font-size: var(--text-sm); color: var(--body-text-color-subdued);
                        text-align: right; }
#char-count .tw-count:empty, #char-count .tw-busy:empty { display: none; }
#char-count .tw-busy { font-size: var(--text-sm); color: var(--body-text-color-subdued); }
#char-count .tw-count.tw-over { color: var(--error-text-color); font-weight: 600; }
/* Small screens: the persona and model pickers come first, above the conversation. */
@media (max-width: 720px) {
  .tw-chat-row { flex-direction: column; }
  .tw-settings { order: -1; }
  .tw-personas, .tw-settings .tw-note, .tw-settings .info-text { display: none; }
}
.tw-footer { display: block; margin-top: 0.4rem; font-size: 0.78rem;
             color: var(--body-text-color-subdued); }
#chat img { max-width: 100%; }
.tw-inline-button { align-self: end; margin-bottom: var(--spacing-md); }
/* Sharing an image uploads it to Hugging Face; nothing here should leave the machine. */
#chat button[aria-label="Share"] { display: none; }
"""


def theme() -> Any:
    import gradio as gr

    return gr.themes.Soft(primary_hue="orange", secondary_hue="slate", neutral_hue="slate",
                          font=LOCAL_FONTS, font_mono=LOCAL_MONO).set(
        block_label_background_fill="transparent", block_title_background_fill="transparent",
        block_label_text_color="*neutral_700", block_title_text_color="*neutral_700",
        block_label_padding="0 0 *spacing_xs 0", block_title_padding="0 0 *spacing_xs 0",
        button_cancel_text_color="#b91c1c", button_cancel_border_color="#fecaca")
