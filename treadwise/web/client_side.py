"""What runs in the browser alone, with no server round trip: the character counter and the
note that a message was not sent because a reply is still being written."""

COUNT_FROM = 0.8  # the character counter appears from this share of the limit on
# Runs on every change of the message box; formatted with (limit, first count shown).
COUNTER_JS = """(text) => {
  const limit = %d, shown = %d, note = document.querySelector('#char-count .tw-count');
  const count = [...(text || '')].length;
  if (note) {
    note.textContent = count >= shown ? `${count.toLocaleString('en-US')} / `
      + `${limit.toLocaleString('en-US')} characters`
      + (count > limit ? ': too long to send, please shorten it' : '') : '';
    note.classList.toggle('tw-over', count > limit);
  }
  return [];
}"""
# A message sent while a reply runs is not sent (Send is disabled, Enter ignored): say so.
# Formatted with the note's words.
BUSY_JS = """() => {
  const note = document.querySelector('#char-count .tw-busy');
  if (note && document.querySelector('#send')?.disabled) {
    note.textContent = '%s';
    clearTimeout(note.hideTimer);
    note.hideTimer = setTimeout(() => { note.textContent = ''; }, 5000);
  }
  return [];
}"""
