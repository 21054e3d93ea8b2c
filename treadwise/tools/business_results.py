"""The business tools' artifacts: what was asked, what was found, and the outcome by name."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from treadwise.privacy.erasure import ErasureReport
from treadwise.profile.entities import Section
from treadwise.storage.leads import Erased
from treadwise.tools.artifacts import ToolArtifact


def quote(text: str, limit: int = 60) -> str:
    """User text echoed back on one short line, so a huge argument is not repeated in full."""
    text = " ".join(text.split())
    return f"'{text[:limit]}...'" if len(text) > limit else f"'{text}'"


def _a(word: str) -> str:
    vowel_sound = word[0] in "AEFHILMNORSX" if word.isupper() else word[0].lower() in "aeiou"
    return f"an {word}" if vowel_sound else f"a {word}"


def slot(lead_time: str) -> str:
    return f"next slot in {lead_time}" if lead_time[:1].isdigit() else f"next slot {lead_time}"


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True)


class BusinessInfo(ToolArtifact):
    """A business-profile section; `matched` False when the overview stands in for the topic."""

    kind: Literal["business_info"] = "business_info"
    topic: str
    company: str
    section: str
    title: str
    text: str
    facts: list[str] = []
    matched: bool = True
    topics: list[str] = []  # every topic, offered when none matched

    def words(self) -> str:
        shown = Section(self.section, self.title, self.text, tuple(self.facts)).render()
        if self.matched:
            return f"{self.company} - {shown}"
        return (f"No specific section on {quote(self.topic)}; here is the overview.\n"
                f"{self.company} - {shown}\n"
                f"Topics you can ask about: {', '.join(self.topics)}.")

    def brief(self) -> str:
        return self.title if self.matched else "overview"


class Tire(_Part):
    model: str
    sizes: str
    reason: str


def _listing(tires: list[Tire]) -> str:
    return "\n".join(f"{n}. {t.model} (sizes {t.sizes}): {t.reason}"
                     for n, t in enumerate(tires, 1))


class TireRecommendation(ToolArtifact):
    """Tire lines for a vehicle and usage as the catalogue understood them (`vehicle`, `use`),
    or the closest usage it sells for (`alternative_use`) when none fits."""

    kind: Literal["tire_recommendation"] = "tire_recommendation"
    outcome: Literal["recommended", "not_offered", "unknown_vehicle", "unknown_usage"]
    vehicle_type: str
    usage: str
    vehicle: str | None = None
    use: str | None = None
    tires: list[Tire] = []
    alternative_use: str | None = None
    alternatives: list[Tire] = []
    note: str = ""  # why no line is sold for this vehicle and usage
    vehicles: list[str] = []  # every vehicle type and usage the catalogue knows
    usages: list[str] = []

    def words(self) -> str:
        supported = (f"Supported vehicle types: {', '.join(self.vehicles)}. "
                     f"Usages: {', '.join(self.usages)}.")
        if self.outcome == "unknown_vehicle" or self.vehicle is None:
            return f"I don't recognise the vehicle type {quote(self.vehicle_type)}. {supported}"
        vehicle = _a(self.vehicle)
        if self.outcome == "recommended":
            return f"Recommended tires for {vehicle} ({self.use} use):\n{_listing(self.tires)}"
        if self.outcome == "unknown_usage":
            reply = f"I don't recognise the usage {quote(self.usage)}. {supported}"
            if self.alternatives:
                reply += (f"\nAll-round picks for {vehicle} ({self.alternative_use} use):\n"
                          f"{_listing(self.alternatives)}")
            return reply
        reply = f"We don't sell a tire line for {vehicle} used for {self.use}. {self.note}".rstrip()
        if self.alternatives:
            reply += (f"\nClosest alternative - {vehicle} ({self.alternative_use} use):\n"
                      f"{_listing(self.alternatives)}")
        return f"{reply}\n{supported}"

    def brief(self) -> str:
        return ", ".join(t.model for t in self.tires) or self.outcome.replace("_", " ")


class Offer(_Part):
    """A service a city offers and its next free slot."""

    service: str
    next_slot: str


class Nearby(_Part):
    city: str
    region: str
    miles: float
    next_slot: str | None = None


class ServiceAvailability(ToolArtifact):
    """Whether a service is offered in a place: `city` and `service` as recognised (None when
    not), the next slot, what the city offers, and the nearest places that do."""

    kind: Literal["service_availability"] = "service_availability"
    outcome: Literal["available", "unavailable", "listing", "unknown_service", "not_served"]
    location: str
    service_type: str
    city: str | None = None  # a served city, or a known place we do not serve
    region: str | None = None
    service: str | None = None  # the service's key and its label
    label: str | None = None
    next_slot: str | None = None
    offered: list[Offer] = []  # what the city offers
    nearest: list[Nearby] = []  # closest served cities (offering the service, when named)
    services: list[str] = []  # every service's label, when the one asked is not known
    served: list[str] = []  # every served city, "Austin (TX)", when the place is not served

    @property
    def available(self) -> bool:
        return self.outcome in ("available", "listing")

    def words(self) -> str:
        if self.outcome == "not_served":
            return self._not_served()
        if self.outcome == "listing":
            return f"Yes, we serve {self.city}: " + ", ".join(
                f"{o.service} ({slot(o.next_slot)})" for o in self.offered) + "."
        if self.outcome == "unknown_service":
            offered = ", ".join(o.service for o in self.offered) or "nothing yet"
            return (f"I don't recognise the service {quote(self.service_type)}. Services: "
                    f"{', '.join(self.services)}. In {self.city} we offer: {offered}.")
        if self.outcome == "available":
            return f"Yes, {self.label} is available in {self.city} ({slot(self.next_slot or '')})."
        reply = f"Sorry, {self.label} is not available in {self.city} yet"
        if self.nearest:
            other = self.nearest[0]
            return (f"{reply}; nearest: {other.city}, about {other.miles:.0f} miles away "
                    f"({slot(other.next_slot or '')}).")
        return f"{reply}, nor anywhere else we serve."

    def _not_served(self) -> str:
        served = ", ".join(self.served)
        if self.city is None:
            return (f"We don't serve {quote(self.location)} yet. TreadWise currently serves: "
                    f"{served}.")
        what = f" for {self.label}" if self.label else ""
        closest = " and ".join(f"{n.city} (about {n.miles:,.0f} miles away)" for n in self.nearest)
        return (f"We don't serve {self.city} ({self.region}) yet. The nearest cities we serve"
                f"{what}: {closest}. TreadWise currently serves: {served}.")

    def brief(self) -> str:
        return self.outcome.replace("_", " ")


class InterestResult(ToolArtifact):
    """A contact request: saved, already on file (asked before in this conversation), or
    updated to a corrected address (`replaced` the old one)."""

    kind: Literal["customer_interest"] = "customer_interest"
    outcome: Literal["saved", "already_on_file", "updated"]
    email: str
    about: str  # what they want, shortened
    replaced: str | None = None

    def words(self) -> str:
        if self.outcome == "updated":
            return (f"Updated: we'll contact {self.email} instead of {self.replaced} "
                    f"about {self.about}.")
        status = "Already on file" if self.outcome == "already_on_file" else "Saved"
        return f"{status}: we'll contact {self.email} about {self.about}."

    def brief(self) -> str:
        return self.outcome.replace("_", " ")


class FeedbackResult(ToolArtifact):
    """A question recorded for the staff, and its reference number."""

    kind: Literal["feedback"] = "feedback"
    ref: int

    def words(self) -> str:
        return (f"Noted (ref #{self.ref}): the TreadWise team will look into this question and "
                "follow up.")

    def brief(self) -> str:
        return f"ref #{self.ref}"


class ErasedLead(_Part):
    email: str
    message: str


class ErasureResult(ToolArtifact):
    """What deleting the conversation's data removed: its contact requests and how many
    questions; `no_thread` when the conversation had no id to find them by."""

    kind: Literal["erasure"] = "erasure"
    outcome: Literal["deleted", "nothing", "no_thread"]
    leads: list[ErasedLead] = []
    questions: int = 0

    @classmethod
    def of(cls, erased: Erased) -> ErasureResult:
        leads = [ErasedLead(email=row["email"], message=row["message"][:60])
                 for row in erased.leads]
        return cls(outcome="deleted" if leads or erased.feedback else "nothing", leads=leads,
                   questions=erased.feedback)

    @property
    def deleted(self) -> str:
        """"1 contact request (ana@fleetco.com: fleet pricing) and 2 questions"."""
        return ErasureReport([lead.model_dump() for lead in self.leads],
                             self.questions).describe()

    @property
    def emails(self) -> list[str]:
        return [lead.email for lead in self.leads]

    def words(self) -> str:
        if self.outcome == "no_thread":
            return "Nothing to delete: this conversation has no id, so nothing was stored for it."
        if self.outcome == "nothing":
            return "Nothing to delete: nothing was stored from this conversation."
        return (f"Deleted: {self.deleted}. What was deleted is gone from the store, and nobody "
                "will contact the customer.")

    def brief(self) -> str:
        return self.outcome.replace("_", " ")
