"""The page's look: a theme with local fonts only (no outside fetch), colours that meet WCAG AA
contrast in light and dark mode, and CSS that keeps every line on a phone's screen."""

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
  .tw-chat-row > .column { width: 100%; }
  .tw-settings { order: -1; }
  .tw-personas, .tw-settings .tw-note, .tw-settings .info-text { display: none; }
  /* Pickers side by side stack (Gradio puts neighbouring inputs in one .form box). */
  .tw-wrap-row, .tw-wrap-row > .form { flex-wrap: wrap; }
  .tw-wrap-row > *, .tw-wrap-row > .form > * { flex: 1 1 100% !important; }
}
.tw-footer { display: block; margin-top: 0.4rem; font-size: 0.78rem;
             color: var(--body-text-color-subdued); }
#chat img { max-width: 100%; }
/* Gradio draws chat text at 80% opacity, which takes the footer below AA contrast. */
.message .prose.chatbot { opacity: 1; }
/* The theme has no dark accent colour: the picked tab's text must read on the dark page. */
.dark [role="tab"][aria-selected="true"] { color: var(--primary-400); }
.tw-inline-button { align-self: end; margin-bottom: var(--spacing-md); }
/* Sharing an image uploads it to Hugging Face; nothing here should leave the machine. */
#chat button[aria-label="Share"] { display: none; }
/* A long unbroken word (a URL, a pasted token) wraps anywhere instead of widening the bubble,
   the input or the page: flex items may shrink below their content's width. */
.tw-chat-row > .column, .tw-compose > *, #side-by-side > *, #side-by-side .row > * {
  min-width: 0; }
.message-content, .message .prose, .tw-note, .tw-footer, #message textarea,
#sbs-message textarea, #transcript-view, #run-report, #live-report, #sweep-status {
  overflow-wrap: anywhere; }
.message pre, .message code { white-space: pre-wrap; overflow-wrap: anywhere; }
.tw-compose #send { flex: 0 0 auto; }
/* A picked value reads in full: the caret sits beside the text, never over it. */
input[role="combobox"] { padding-right: 28px; text-overflow: ellipsis; }
/* Charts one a row at their own size (not squares the width of the page), readable where
   they stand; a narrow screen scales them down to its width. */
#run-charts .grid-container { grid-auto-rows: auto; padding-top: var(--size-8); }
#run-charts .thumbnail-item { aspect-ratio: auto; height: auto; padding-bottom: 2rem; }
#run-charts .thumbnail-item img { width: auto; max-width: 100%; height: auto; margin: 0 auto; }
#run-charts .caption-label { white-space: normal; overflow: visible; text-overflow: clip;
                             max-width: 100%; }
/* Keyboard focus is always visible. */
button:focus-visible, [role="button"]:focus-visible, [role="tab"]:focus-visible,
a:focus-visible, input:focus-visible, textarea:focus-visible, summary:focus-visible {
  outline: 3px solid var(--color-accent); outline-offset: 2px; }
/* A tool step opens with its title alone: the arrow inside is its picture, not a control. */
.thought-group .title button { pointer-events: none; }
/* Code highlighting's token colours (CodeMirror's in light mode, the chat's everywhere) are
   below AA on their background: tokens take the text colour, on the theme's code background. */
body:not(.dark) .cm-content span, .message pre .token { color: inherit !important; }
.message pre, .message pre code { background: var(--code-background-fill);
                                  color: var(--body-text-color); }
.tw-sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px;
              overflow: hidden; clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
"""

# Gradio scopes `CSS` inside its container; the page's own margins are outside it, so these
# rules go in the page's head. A phone's screen is too narrow for 32 px on each side.
HEAD = """<style>
@media (max-width: 720px) { .gradio-container .app { padding-left: 12px; padding-right: 12px; } }
</style>"""


def theme() -> Any:
    import gradio as gr

    # Soft's orange 500 under white text, and slate 400 for secondary text on white, are below
    # WCAG AA (4.5:1 for text, 3:1 for controls): primary 700 and slate 600 meet it.
    return gr.themes.Soft(primary_hue="orange", secondary_hue="slate", neutral_hue="slate",
                          font=LOCAL_FONTS, font_mono=LOCAL_MONO).set(
        block_label_background_fill="transparent", block_title_background_fill="transparent",
        block_label_background_fill_dark="transparent",
        block_title_background_fill_dark="transparent",
        block_label_text_color="*neutral_700", block_title_text_color="*neutral_700",
        block_label_text_color_dark="*neutral_100", block_title_text_color_dark="*neutral_100",
        block_label_padding="0 0 *spacing_xs 0", block_title_padding="0 0 *spacing_xs 0",
        body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_300",
        input_placeholder_color="*neutral_500", input_placeholder_color_dark="*neutral_400",
        color_accent="*primary_700",
        button_primary_background_fill="*primary_700",
        button_primary_background_fill_hover="*primary_800",
        button_primary_border_color="*primary_700",
        button_primary_border_color_hover="*primary_800",
        button_primary_background_fill_dark="*primary_700",
        button_primary_background_fill_hover_dark="*primary_800",
        button_primary_border_color_dark="*primary_700",
        button_primary_border_color_hover_dark="*primary_800",
        checkbox_label_background_fill_selected="*primary_700",
        checkbox_label_background_fill_selected_dark="*primary_700",
        checkbox_label_text_color_selected_dark="white",
        # Soft's dark hover (orange 500 under white text) is below AA too.
        button_secondary_background_fill_hover_dark="*primary_700",
        checkbox_label_background_fill_hover_dark="*primary_700",
        button_cancel_text_color="#b91c1c", button_cancel_border_color="#fecaca")
