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
                     "haven't recorded anything. Could you retype your e-mail address using plain "
                     "letters, like name@example.com?"],
        "technical": ["Address not accepted: it contains {character}, which is not a plain "
                      "letter, digit or . _ % + -. Nothing was recorded. Retype the e-mail "
                      "address in plain characters (name@example.com)."],
        "cautious": ["I'm sorry, that address contains a character I can't read exactly as "
                     "typed ({character}), so I haven't recorded anything. Could you please "
                     "retype your e-mail address using plain letters, like name@example.com?"],
    },
    "data_erased": {
        "friendly": ["Done! I've deleted {deleted}, and nobody will contact you."],
        "technical": ["Erasure complete: deleted {deleted}. No contact will follow."],
        "cautious": ["I've deleted {deleted}, and nobody will contact you."],
    },
    "nothing_erased": {
        "friendly": ["There's nothing to delete: no contact request or question was stored from "
                     "this conversation, and nobody will contact you."],
        "technical": ["Nothing to erase: this conversation stored no contact request and no "
                      "question. No contact will follow."],
        "cautious": ["Nothing was stored from this conversation (no contact request and no "
                     "question), so there's nothing to delete, and nobody will contact you."],
    },
    "memory_erased": {
        "friendly": ["I've also erased this conversation, so I won't remember any of it."],
        "technical": ["This conversation's memory is erased as well; nothing of it is kept."],
        "cautious": ["This conversation has been erased as well, so nothing of it is kept."],
    },
    "memory_not_erased": {
        "friendly": ["I couldn't erase this conversation itself just now, though; please press "
                     "Forget me or ask again in a moment."],
        "technical": ["The conversation's memory could not be erased now; retry with Forget me."],
        "cautious": ["I'm sorry, I couldn't erase this conversation itself just now; please try "
                     "Forget me again in a moment."],
    },
    "erasure_elsewhere": {
        "friendly": ["I can only delete what you gave in this conversation, so {address} stays "
                     "as it is. To have it deleted, please write to {contact} from that "
                     "address and our staff will take care of it."],
        "technical": ["{address} was not given in this conversation and is not erased on "
                      "request here; write to {contact} from that address for staff deletion."],
        "cautious": ["For your protection I can only delete what was given in this "
                     "conversation, so {address} is unchanged. Please write to {contact} from "
                     "that address and our staff will delete it."],
    },
    "confirm_erasure": {
        "friendly": ["Just to be sure: would you like me to delete everything this conversation "
                     "holds about you (the chat, and any contact request or question from it)? "
                     "Say yes, or press Forget me."],
        "technical": ["Confirm erasure of this conversation's data (memory, contact requests, "
                      "questions): reply yes, or use Forget me."],
        "cautious": ["Before I delete anything: would you like me to erase everything this "
                     "conversation holds about you, including any contact request or question? "
                     "Please reply yes to confirm, or press Forget me."],
    },
    "data_held": {
        "friendly": ["Happy to show you! {held} You can ask me to delete it any time, or press "
                     "Forget me."],
        "technical": ["{held} Ask for deletion or use Forget me to erase it."],
        "cautious": ["Of course. {held} If you'd like any of it deleted, just ask or press "
                     "Forget me."],
    },
    "others_refused": {
        "friendly": ["Sorry, I can't share anything about other customers: who signed up, their "
                     "addresses and our lead list stay private. I'm happy to help with your own "
                     "tires, services or a math problem, though!"],
        "technical": ["Other customers' data (sign-ups, addresses, leads) is not disclosed. Ask "
                      "about your own request, our services or a calculation instead."],
        "cautious": ["I'm sorry, but I can't share any information about other customers, "
                     "including who signed up, their addresses or our lead list. I'd be glad to "
                     "help with your own questions."],
    },
    "nothing_deleted": {
        "friendly": ["Nothing has been deleted. If you'd like me to delete what this "
                     "conversation holds, just say so or press Forget me."],
        "technical": ["No deletion was performed. Request erasure or use Forget me."],
        "cautious": ["To be clear, nothing has been deleted. If you'd like me to delete what "
                     "this conversation holds, please say so or press Forget me."],
    },
    "nothing_removed": {
        "friendly": ["Please don't share card numbers, passwords or ID numbers here; I can't "
                     "take them in chat."],
        "technical": ["Card numbers, passwords and ID numbers are not accepted in this channel."],
        "cautious": ["For your protection, please don't share card numbers, passwords or ID "
                     "numbers here."],
    },
}


def fallback(part: str, persona: str) -> list[str]:
    """The built-in phrases for `part` in `persona`'s voice (the friendly one's otherwise)."""
    voices = PHRASES.get(part, {})
    return voices.get(persona) or voices.get("friendly", [])
