"""Understanding one user message: small talk, language, contact cues and the entities in it.

Entities come from the business data (tire catalogue, coverage table, profile keywords), so a
new city, vehicle synonym or FAQ section in the YAML files is understood without code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from treadwise import profile
from treadwise.privacy import consent
from treadwise.privacy.emails import IN_TEXT_RE, Lookalike, find_emails, scan
from treadwise.privacy.redaction import CARD_NUMBER, ID_NUMBER, REDACTED, redact
from treadwise.rules.mathwords import strip_padding

GREETING = (r"(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|day)|sup"
            r"|what'?s up|morning|evening|hey hey)(?: (?:there|team|treadwise|folks|all"
            r"|everyone|friend|again))*|how are (?:you|u|things)(?: doing)?(?: today)?"
            r"|how'?s it going")
THANKS = (r"(?:(?:ok(?:ay)?|great|perfect|awesome|cool|nice|brilliant|excellent|wonderful|super"
          r"|fantastic|lovely|good|alright|got it) )*(?:thanks?|thank you|thx|ty|tysm|cheers"
          r"|many thanks|much appreciated|(?:i )?appreciate it|thanks a (?:lot|bunch|ton))"
          r"(?: (?:so|very) much)?(?: for (?:the|your|all the|all your) help)?(?: again| a lot)?")
GOODBYE = (r"(?:ok(?:ay)? )?(?:bye(?: bye)?|goodbye|good bye|see (?:you|ya)(?: later| soon"
           r"| around)?|later|cya|take care|have a (?:good|nice|great) (?:day|one|evening|night"
           r"|weekend)|that'?s (?:all|it)(?: for (?:now|today))?|that is all|i'?m done|all done"
           r"|nothing else|no(?: thanks| thank you)?(?: that'?s (?:it|all))?|gotta go"
           r"|talk (?:to you )?later|ttyl|good ?night)")
CAPABILITIES = (r"(?:what can you do|what (?:else )?can you help(?: me)? with|what do you do"
                r"|what are you|who are you|help|how can you help(?: me)?|what can i ask"
                r"(?: you)?|what do you know|what are your (?:capabilities|features|skills)"
                r"|what is this|menu|options|what are you able to do|what else can you do"
                r"|can you help(?: me)?|what can this do|what services can you help with)")
ACK = (r"(?:ok(?:ay)?|k|kk|cool|great|nice|alright|all right|got it|sounds good|perfect"
       r"|awesome|i see|understood|fine|good|noted|sure thing|wow|interesting|neat|excellent)")
SMALLTALK = [("goodbye", GOODBYE), ("thanks", THANKS), ("capabilities", CAPABILITIES),
             ("greeting", GREETING), ("ack", ACK)]
CHOICE_RE = re.compile(r"(?:the )?(?:(?P<first>first|1st|former|option 1|1|top)"
                       r"|(?P<second>second|2nd|latter|option 2|2|bottom))(?: one| reading)?")

SCRIPTS = [("ja", r"[\u3040-\u30ff]"), ("zh", r"[\u4e00-\u9fff]"), ("ko", r"[\uac00-\ud7af]"),
           ("ru", r"[\u0400-\u04ff]"), ("ar", r"[\u0600-\u06ff]"), ("he", r"[\u0590-\u05ff]"),
           ("el", r"[\u0370-\u03bf\u03c1-\u03ff]"), ("hi", r"[\u0900-\u097f]"),
           ("th", r"[\u0e00-\u0e7f]")]
STOPWORDS = {
    "es": "hola gracias cuánto cuanto cuesta cuestan llanta llantas neumático neumáticos "
          "neumaticos dónde donde qué por favor para tienen puedo necesito quiero cómo el la "
          "los las es una un de en y con horario precio coche carro buenos días dias tardes "
          "usted ustedes venden está están mi adiós adios",
    "fr": "bonjour merci combien coûte coute pneu pneus je vous est les des une pour avec où "
          "quel quelle heures voiture s'il plaît plait salut bonsoir c'est nous avez êtes",
    "de": "hallo danke wie viel kostet reifen ich sie bitte wo auto haben der die das und ist "
          "ein eine mein meine guten tag öffnungszeiten brauche neue tschüss",
    "pt": "olá ola obrigado obrigada quanto custa pneu pneus você voce preciso meu minha "
          "carro para com não nao bom dia",
    "it": "ciao grazie quanto costa gomme pneumatici sono della per macchina buongiorno vorrei",
}
_STOPWORD_SETS = {code: frozenset(vocab.split()) for code, vocab in STOPWORDS.items()}
ENGLISH = set("the is a what how do you i my for and of to in your tires tire much can are "
              "have it this that me we our with on at be".split())

SECRET_RE = re.compile(
    r"\b(print|show|reveal|tell|give|display|repeat|leak|output|share|dump|what is|what's"
    r"|what are)\b.{0,40}(system prompt|your (instructions|prompt)|api[ _-]?keys?|secret key"
    r"|password|credentials|environment variables?|\.env\b|token)", re.I)
PRIVACY_RE = re.compile(
    r"\b(list|show|give|dump|export|print|send|tell|share|read|what are|who are)\b.{0,50}"
    r"(other customers?|customers'|every(one's)? ?(customer|lead|e-?mail)|all (the )?(customer"
    r"|lead|e-?mail|contact)|stored (e-?mail|lead|contact|customer)|your (leads|customer list"
    r"|database))", re.I)
UNTRUSTED_RE = re.compile(
    r"^\s*(?:system|assistant|tool|function|developer)\s*(?:result|output|message|response"
    r"|note)?\s*:|\btool (?:result|output|response)\b|\[(?:system|tool|inst)\b"
    r"|<\|?(?:im_start|system)|\bignore (?:all |any |your |the )?(?:previous|prior|above"
    r"|earlier) (?:instructions|rules|prompts?)|\byou are now\b|\b(?:admin|developer|god"
    r"|debug) mode\b|\bnew instructions\b|\brecord_customer_interest\b", re.I | re.M)
CORRECTION_RE = re.compile(
    r"\binstead\b|\bactually\b|\bsorry\b|\btypo\b|\bwrong (?:e-?mail|address)\b|\bmistake\b"
    r"|\bcorrect(?:ion|ed)?\b|\bi meant\b|\bmeant to\b|\bchange (?:it|my e-?mail|the "
    r"(?:e-?mail|address)|that)\b|\bupdate (?:it|my e-?mail|the (?:e-?mail|address))\b"
    r"|\bnew (?:e-?mail|address)\b|\buse \S+@", re.I)
EMAIL_ATTEMPT_RE = re.compile(
    r"\S+@\S*|\b(?:my )?e-?mail(?: address)? is\s+(\S+)|\b\w+ (?:at|\(at\)|\[at\]) \w+"
    r"(?: (?:dot|\(dot\)|\[dot\]) \w+)+\b", re.I)
NAME_RE = re.compile(r"\b(?i:my name is|i am|i'm|this is|name:)\s+([A-Z][a-zA-Z'\-]+"
                     r"(?:\s+[A-Z][a-zA-Z'\-]+)?)")
NOT_NAMES = {"Interested", "Looking", "Not", "Here", "Sure", "Sorry", "In", "From", "On", "At",
             "Just", "So", "Very", "Also", "Good", "Fine", "Ok", "Okay", "The", "A", "An",
             "Trying", "Wondering", "Asking", "Calling", "Writing", "Done", "Back", "Still"}

TIRE_RE = re.compile(r"\btyres?\b|\btires?\b", re.I)
RECOMMEND_RE = re.compile(
    r"\brecommend|\bsuggest|\bbest\b|\bwhich\b|\bwhat (?:kind|type|sort|brand|model)"
    r"|\bwhat (?:tires?|tyres?)\b(?! pressure)|\bneed (?:new |some |a set of )?(?:tires?|tyres?)"
    r"|\blooking for\b|\bshould i (?:buy|get|choose|go with|use)|\bgood (?:tires?|tyres?"
    r"|option|choice)|\b(?:tires?|tyres?) for (?:my|a|an|our|the)\b|\bbuy (?:new )?(?:tires?"
    r"|tyres?)|\bnew (?:tires?|tyres?)\b|\boptions?\b|\bpick\b|\bi drive\b", re.I)
AVAILABILITY_RE = re.compile(
    r"\b(?:do|can|will|could|would) (?:you|u|y'all|someone|a van|your (?:team|vans?|techs?"
    r"|technicians?))(?: guys)? (?:do|offer|provide|service|cover|come|install|fix|repair"
    r"|rotate|balance|go|serve|work|operate|get|set up|swap|change|mount|patch|plug|recycle"
    r"|take|handle|send)\b|\bavailab|\bin my area\b|\bnear me\b|\bcome (?:out )?to\b"
    r"|\bare (?:you|y'all)(?: guys| folks)? (?:in|available|open in|near|around)\b"
    r"|\b(?:do you|does treadwise) (?:have"
    r"|serve|cover|operate|work)\b|\bserv(?:e|ice) (?:in|near|around)\b|\bhow (?:soon|quickly"
    r"|fast)\b|\bwhen can\b|\bnext (?:slot|appointment)\b|\bbook\b|\bschedule\b"
    r"|\bappointment\b|\bis there\b.{0,40}\bin\b|\bin (?:my )?(?:city|town)\b", re.I)
PRODUCT_RE = re.compile(r"\b(?:do|does) (?:you|treadwise) (?:sell|carry|stock|have|make"
                        r"|offer|do)\b|\bcan i (?:buy|get|order)\b", re.I)
FOLLOW_UP_RE = re.compile(r"^(?:and|what about|how about|and what about|what if|ok(?:ay)?,? "
                          r"(?:and|what about|how about)|also|same (?:for|in|with)|now|then"
                          r"|for|in)\b", re.I)
QUESTION_RE = re.compile(
    r"\?\s*$|^(?:what|how|why|when|where|who|whom|whose|which|do|does|did|can|could|is|are"
    r"|was|were|will|would|should|shall|may|might|have|has|am|any|tell me|i (?:want|need"
    r"|would like) to know|explain|describe|i (?:need|want|would like))\b", re.I)
PLACE_RE = re.compile(r"\b(?:in|near|around|to|at|from)\s+([A-Z][a-zA-Z.'-]+"
                      r"(?:\s+[A-Z][a-zA-Z.'-]+){0,2})")
NOT_PLACES = {"I", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
              "Smart", "Smart Tread", "TreadWise", "English", "Spanish", "January", "March",
              "April", "May", "June", "July", "August", "September", "October", "November",
              "December", "Fleet", "The", "My", "Our"}


# Common shorthand and misspellings, read as meant before anything else looks at the words.
TYPOS = {
    "wat": "what", "wats": "what's", "whats": "what's", "hw": "how", "shld": "should",
    "shud": "should", "wud": "would", "cud": "could", "pls": "please", "plz": "please",
    "thx": "thanks", "thnx": "thanks", "recomend": "recommend", "reccomend": "recommend",
    "reccommend": "recommend", "recommand": "recommend", "availible": "available",
    "avaliable": "available", "avalable": "available", "availabe": "available",
    "instalation": "installation", "installaton": "installation", "rotaion": "rotation",
    "roation": "rotation", "presure": "pressure", "pressur": "pressure", "warrenty": "warranty",
    "waranty": "warranty", "garantee": "guarantee", "recyle": "recycle", "wich": "which",
    "whihc": "which", "teh": "the", "adn": "and", "intrested": "interested",
    "intersted": "interested", "emial": "email", "adress": "address", "tirs": "tires",
    "tyers": "tires", "tiress": "tires", "intergral": "integral", "integeral": "integral",
    "derivitive": "derivative", "derivate": "derivative", "squre": "square",
    "sqaure": "square", "tims": "times", "mulitply": "multiply", "multipy": "multiply",
    "divde": "divide", "devide": "divide", "calcualte": "calculate", "calcuate": "calculate",
    "factoral": "factorial", "factorail": "factorial", "sedna": "sedan", "hrs": "hours",
    "opn": "open", "r": "are", "ur": "your", "im": "i'm", "ive": "i've", "dont": "don't",
    "cant": "can't", "thats": "that's", "doesnt": "doesn't", "isnt": "isn't",
    "wanna": "want to", "gimme": "give me", "abt": "about", "tmrw": "tomorrow",
}


def normalise(text: str) -> str:
    """Shorthand and common misspellings spelled out; addresses and formulas left alone."""
    wordy = not re.search(r"[\d^=*/+]", text)

    def fix(match: re.Match) -> str:
        word = match.group(0)
        if word.lower() == "u":
            return "you" if wordy else word
        fixed = TYPOS.get(word.lower())
        return word if fixed is None else fixed

    return re.sub(r"(?<![\w@.'-])[A-Za-z]+(?![\w@'-]|\.\w)", fix, text)


@dataclass
class Reading:
    """What one message says, before any decision about what to do with it."""

    text: str                          # as typed, shorthand spelled out
    said: str = ""                     # exactly as typed
    core: str = ""
    smalltalk: str | None = None
    answer: str | None = None          # "yes" / "no" to a question the assistant asked
    choice: int | None = None          # "the first one" -> 0
    language: str | None = None
    secret: bool = False
    emails: list[str] = field(default_factory=list)
    company_email: bool = False
    email_attempt: bool = False
    quoted_emails: list[str] = field(default_factory=list)  # in someone else's words only
    lookalikes: list[Lookalike] = field(default_factory=list)
    no_contact: bool = False
    withdraws: bool = False
    cancels: bool = False              # "never mind", "no thanks": pending consent is cleared
    may_erase: bool = False            # "forget everything": asks before erasing anything
    access: bool = False               # "What do you have about me?"
    others: bool = False               # asks about other customers (never a topic)
    doubt: bool = False                # also asks something that is not about contact
    card: bool = False                 # card details typed (removed before anyone sees them)
    private: bool = False              # a password or an ID number typed (removed too)
    third_party: bool = False
    untrusted: bool = False
    wants_contact: bool = False
    correction: bool = False
    name: str = ""
    introduction: bool = False         # "My name is Ana Silva." and nothing else
    vehicle: str | None = None
    usage: str | None = None
    city: str | None = None
    place: str | None = None           # a place we do not serve (known or just named)
    service: str | None = None
    topic: str | None = None
    tires: bool = False
    recommend: bool = False
    availability: bool = False
    product_question: bool = False
    follow_up: bool = False
    question: bool = False


def understand(text: str) -> Reading:
    """Read one message; nothing here depends on the conversation so far."""
    stripped = normalise(text.strip())
    core = strip_padding(stripped) or stripped
    reading = Reading(text=stripped, said=text.strip(), core=core)
    flat = _flat(stripped)
    reading.smalltalk = _smalltalk(stripped)
    reading.answer = "yes" if consent.is_yes(flat) else "no" if consent.is_no(flat) else None
    choice = CHOICE_RE.fullmatch(flat)
    reading.choice = None if choice is None else (0 if choice.group("first") else 1)
    reading.language = detect_language(stripped)
    reading.secret = bool(SECRET_RE.search(stripped) or PRIVACY_RE.search(stripped))
    _contact_cues(reading)
    _entities(reading)
    return reading


def _flat(text: str) -> str:
    """Lower case, apostrophes kept, other punctuation and emoji dropped."""
    return " ".join(re.sub(r"[^\w\s']+", " ", text.casefold().replace("\u2019", "'")).split())


def _smalltalk(text: str) -> str | None:
    """greeting, thanks, goodbye, capabilities or ack when the whole message is small talk."""
    cleaned = re.sub(r"[.!?;,]+", ",", text.casefold().replace("\u2019", "'"))
    cleaned = re.sub(r"[^\w\s',]+", " ", cleaned)
    if not cleaned.strip(" ,") or len(cleaned) > 80:
        return None
    kinds: list[str] = []
    for part in re.split(r"\s*,\s*|\s+and\s+", cleaned):
        words = part.split()
        if not words:
            continue
        # "thanks bye": a part may hold two small-talk phrases without a comma between.
        splits = [[" ".join(words)]] + [[" ".join(words[:i]), " ".join(words[i:])]
                                         for i in range(1, len(words))]
        found = next((ks for pieces in splits if all(ks := [_kind(p) for p in pieces])), None)
        if not found:
            return None
        kinds.extend(k for k in found if k)
    return next((k for k, _ in SMALLTALK if k in kinds), None)


def _kind(phrase: str) -> str | None:
    return next((k for k, pattern in SMALLTALK if re.fullmatch(pattern, phrase)), None)


def detect_language(text: str) -> str | None:
    """The language of a message that is not English, when it clearly is another one."""
    letters = [c for c in text if c.isalpha()]
    for code, pattern in SCRIPTS:
        found = len(re.findall(pattern, text))
        if found >= 2 and found * 2 >= len(letters):
            return code
    # Distinct words of two letters or more: "find y if 5y = 13" is not Spanish.
    words = {w for w in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.casefold())
             if len(w) > 1}
    if not words:
        return None
    english = sum(w in ENGLISH for w in words)
    scores = {code: len(words & vocab) for code, vocab in _STOPWORD_SETS.items()}
    code, score = max(scores.items(), key=lambda item: item[1])
    if "\u00bf" in text or "\u00a1" in text:
        return "es"
    enough = score >= 2 or (len(words) <= 2 and score == len(words))
    return code if enough and score > english else None


@lru_cache(maxsize=1)
def company_domains() -> frozenset[str]:
    """The domains of the company's own addresses, from the business profile."""
    sections = profile.load_business_profile().sections.values()
    text = " ".join(fact for section in sections for fact in section.facts)
    return frozenset(address.rsplit("@", 1)[-1].lower() for address in find_emails(text))


def customer_addresses(text: str) -> tuple[list[str], bool]:
    """The addresses typed that are not the company's, and whether a company one was typed."""
    found: list[str] = []
    company = False
    for address in find_emails(text):
        if address.rsplit("@", 1)[-1].lower() in company_domains():
            company = True
        elif address.lower() not in (a.lower() for a in found):
            found.append(address)
    return found, company


def _contact_cues(reading: Reading) -> None:
    text = reading.text
    own = consent.own_words(text)
    reading.emails, reading.company_email = customer_addresses(own)
    everywhere, _ = customer_addresses(text)
    reading.quoted_emails = [a for a in everywhere if a not in reading.emails]
    reading.lookalikes = scan(text).lookalikes
    reading.email_attempt = not (everywhere or reading.company_email or reading.lookalikes) \
        and bool(EMAIL_ATTEMPT_RE.search(text))
    reading.no_contact = consent.refuses(text)
    reading.withdraws = consent.withdraws(text)
    reading.cancels = consent.cancels(text)
    reading.may_erase = consent.may_erase(text)
    reading.access = consent.asks_access(text)
    reading.others = consent.about_others(text)
    reading.doubt = consent.other_question(text)
    reading.third_party = consent.someone_else(text, next(iter(reading.emails), None))
    reading.untrusted = bool(UNTRUSTED_RE.search(text))
    reading.wants_contact = consent.asks(text)
    reading.correction = bool(CORRECTION_RE.search(text))
    shown = redact(reading.said)
    reading.card = CARD_NUMBER in shown or bool(re.search(
        rf"\b(?:cvv2?|cvc2?|security code)\b\W*{re.escape(REDACTED)}", shown, re.I))
    reading.private = ID_NUMBER in shown or bool(re.search(
        rf"\b(?:pass(?:word|phrase|code|wd)|pwd|pw|pin)\b\W*(?:is|was)?\W*{re.escape(REDACTED)}",
        shown, re.I))
    name = NAME_RE.search(text)
    if name and name.group(1).split()[0] not in NOT_NAMES:
        reading.name = name.group(1)
        rest = re.sub(rf"^(?:{GREETING})\b", "", _flat(NAME_RE.sub(" ", text)).strip())
        reading.introduction = not re.search(r"\w", rest)


def _entities(reading: Reading) -> None:
    text = IN_TEXT_RE.sub(" ", reading.core)
    reading.vehicle = profile.find_vehicle(text)
    reading.usage = profile.find_usage(text)
    reading.city = profile.find_city(text)
    reading.place = None if reading.city else profile.find_place(text) or _named_place(text)
    reading.service = profile.find_service(text)
    reading.topic = "contact" if reading.company_email else profile.find_topic(text)
    reading.tires = bool(TIRE_RE.search(text))
    reading.recommend = bool(RECOMMEND_RE.search(text))
    reading.availability = bool(AVAILABILITY_RE.search(text))
    reading.product_question = bool(PRODUCT_RE.search(text))
    reading.follow_up = bool(FOLLOW_UP_RE.search(reading.core))
    reading.question = bool(QUESTION_RE.search(reading.core)) and len(reading.core.split()) >= 2


def _named_place(text: str) -> str | None:
    for match in PLACE_RE.finditer(text):
        name = match.group(1).rstrip(".")
        if name not in NOT_PLACES and name.split()[0] not in NOT_PLACES:
            return name
    return None


def bare_place(text: str) -> str | None:
    """A short reply that can only be a place name: "anchorage", "in Tulsa, OK"."""
    words = re.sub(r"^(?:i'?m |we'?re |it'?s |its |in |near |around |at |i live in |"
                   r"we are in |i am in )+", "", text.strip().casefold()).strip(" .!?")
    words = re.sub(r",?\s+[a-z]{2}$", "", words)
    if not re.fullmatch(r"[a-z][a-z .'-]{1,40}", words) or len(words.split()) > 3:
        return None
    return " ".join(w.capitalize() for w in words.split())
