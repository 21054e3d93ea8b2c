"""The offline model's words for privacy replies a persona file does not (yet) word itself."""

from __future__ import annotations

# Reply part -> persona -> phrases; a persona's own `voice:` entry of the same name wins, and
# a persona not listed here speaks as the friendly one.
PHRASES: dict[str, dict[str, list[str]]] = {
    "card_refused": {
        "friendly": ["For your safety I can't take card details in chat, so I've removed that "
                     "number and haven't stored it anywhere. Please don't share card numbers, "
                     "security codes or passwords here. Anything else I can help with?"],
        "technical": ["Card data is not accepted in chat: the number was removed before "
                      "processing and nothing of it was stored. Do not send card numbers, "
                      "CVV codes or passwords in this channel."],
        "cautious": ["I'm sorry, but I can't accept card details in chat. I've removed that "
                     "number and nothing of it has been stored. To keep you safe, please don't "
                     "share card numbers, security codes or passwords here."],
    },
    "private_refused": {
        "friendly": ["Please don't share passwords or ID numbers here! I've removed it and "
                     "haven't stored it. How else can I help?"],
        "technical": ["Passwords and ID numbers are not accepted in chat: the value was removed "
                      "before processing and was not stored."],
        "cautious": ["For your protection, please don't share passwords or ID numbers here. "
                     "I've removed it, and nothing of it has been stored."],
    },
    "lookalike_email": {
        "friendly": ["That address has a character I can't read as typed ({character}), so I "
                     "haven't saved anything. Could you retype your e-mail address using plain "
                     "letters, like name@example.com?"],
        "technical": ["Address not accepted: it contains {character}, which is not a plain "
                      "letter, digit or . _ % + -. Nothing was saved. Retype the e-mail "
                      "address in plain characters (name@example.com)."],
        "cautious": ["I'm sorry, that address contains a character I can't read exactly as "
                     "typed ({character}), so I haven't saved anything. Could you please "
                     "retype your e-mail address using plain letters, like name@example.com?"],
    },
    "data_erased": {
        "friendly": ["Done! I've deleted {deleted}, and nobody will contact you. (The text of "
                     "this chat itself isn't part of that.)"],
        "technical": ["Erasure complete: deleted {deleted}. No contact will follow. The chat "
                      "transcript itself is not covered by this deletion."],
        "cautious": ["I've deleted {deleted}, and nobody will contact you. Please note that the "
                     "text of this chat itself isn't covered by this deletion."],
    },
    "nothing_erased": {
        "friendly": ["There's nothing to delete: no contact request or question was stored from "
                     "this conversation, and nobody will contact you."],
        "technical": ["Nothing to erase: this conversation stored no contact request and no "
                      "question. No contact will follow."],
        "cautious": ["Nothing was stored from this conversation (no contact request and no "
                     "question), so there's nothing to delete, and nobody will contact you."],
    },
}


def fallback(part: str, persona: str) -> list[str]:
    """The built-in phrases for `part` in `persona`'s voice (the friendly one's otherwise)."""
    voices = PHRASES.get(part, {})
    return voices.get(persona) or voices.get("friendly", [])
