"""The page's own script, for keyboard and screen-reader users where Gradio's components leave a
gap: names for unnamed icon buttons, one control per tool step, only permitted ARIA, focus back
in the message box after Send and Stop, and each finished reply announced once."""

# Runs once when the page loads (launch's `js`), then again after every change of the page, as
# Gradio re-renders components at will. Only attributes that differ are set: setting one queues
# a mutation, and an unconditional write would wake the observer for ever.
PAGE_JS = r"""() => {
  const set = (element, name, value) => {
    if (element.getAttribute(name) !== value) element.setAttribute(name, value);
  };
  const announcer = document.createElement('div');
  announcer.id = 'tw-announce';
  announcer.className = 'tw-sr-only';
  set(announcer, 'role', 'status');
  set(announcer, 'aria-live', 'polite');
  document.body.appendChild(announcer);
  const REGIONS = {'run-report': 'Report', 'live-report': 'Live experiment report',
                   'compare-result': 'Comparison', 'transcript-view': 'Transcript'};
  let announced = null, lastReply = '';

  const announce = () => {
    // A reply is complete when its footer (who answered, how long it took) is shown.
    const footers = document.querySelectorAll('#chat .tw-footer');
    if (announced === null || footers.length < announced) {
      announced = footers.length;
      return;
    }
    if (footers.length === announced) return;
    announced = footers.length;
    const message = footers[footers.length - 1].closest('.message');
    const text = message ? message.innerText.trim() : '';
    if (text && text !== lastReply) {
      lastReply = text;
      announcer.textContent = 'Reply: ' + text;
    }
  };

  const fix = () => {
    // The chatbot is a live log that would read out every streamed word; the region above
    // reads each reply once, complete.
    document.querySelectorAll('.bubble-wrap[role="log"]')
      .forEach(log => set(log, 'aria-live', 'off'));
    // A tool step is one control, its title; the arrow inside it only shows its state.
    document.querySelectorAll('.thought-group > .title[role="button"]').forEach(title => {
      set(title, 'aria-expanded', String(title.classList.contains('expanded')));
      title.querySelectorAll('button').forEach(arrow => {
        if (!arrow.disabled) arrow.disabled = true;
        set(arrow, 'tabindex', '-1');
        set(arrow, 'aria-hidden', 'true');
      });
      title.querySelectorAll('.loading-spinner').forEach(spinner => {
        set(spinner, 'role', 'img');
        set(spinner, 'aria-label', 'running');
      });
    });
    // Icon buttons Gradio leaves with an empty name get their tooltip's words.
    document.querySelectorAll('button').forEach(button => {
      if (button.getAttribute('aria-hidden') === 'true' || button.textContent.trim()) return;
      if ((button.getAttribute('aria-label') || '').trim()) return;
      const img = button.querySelector('img[alt]');
      if (img && img.alt.trim()) return;
      const title = (button.getAttribute('title') || '').trim();
      if (title) set(button, 'aria-label', title);
    });
    // A region wider than the screen scrolls: the keyboard must reach it to scroll it.
    document.querySelectorAll('#run-report, #live-report, #compare-result, #transcript-view')
      .forEach(region => {
        set(region, 'tabindex', '0');
        set(region, 'role', 'region');
        set(region, 'aria-label', REGIONS[region.id]);
      });
    // aria-label is not allowed on an element with no role (Gradio's empty image boxes).
    document.querySelectorAll('div[aria-label]:not([role]), span[aria-label]:not([role])')
      .forEach(element => element.removeAttribute('aria-label'));
    announce();
  };

  // After Send or Stop (clicked, or pressed from the keyboard) the next message is typed at
  // once: focus goes back to the message box instead of staying on a now disabled button.
  document.addEventListener('click', event => {
    if (event.target.closest && event.target.closest('#send, #stop')) {
      setTimeout(() => document.querySelector('#message textarea')?.focus(), 0);
    }
  }, true);

  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    setTimeout(() => { queued = false; fix(); }, 50);
  }).observe(document.body, {childList: true, subtree: true, characterData: true,
                             attributes: true, attributeFilter: ['class', 'aria-label']});
  fix();
}"""
