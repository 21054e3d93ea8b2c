"""Business tools: company facts, tire recommendations, service coverage, leads and feedback."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from treadwise.profile import (
    City,
    Coverage,
    TireModel,
    load_business_profile,
    load_coverage,
    load_tire_catalogue,
)
from treadwise.storage.leads import InvalidLead, StoreUnavailable
from treadwise.tools import ToolContext


def _quote(text: str, limit: int = 60) -> str:
    """User text echoed back on one short line, so a huge argument is not repeated in full."""
    text = " ".join(text.split())
    return f"'{text[:limit]}...'" if len(text) > limit else f"'{text}'"


def _a(word: str) -> str:
    vowel_sound = word[0] in "AEFHILMNORSX" if word.isupper() else word[0].lower() in "aeiou"
    return f"an {word}" if vowel_sound else f"a {word}"


def _listing(tires: tuple[TireModel, ...]) -> str:
    lines = (f"{n}. {t.model} (sizes {t.sizes}): {t.reason}" for n, t in enumerate(tires, 1))
    return "\n".join(lines)


# Words that ask what a city offers rather than naming one service.
ANY_SERVICE = {"", "any", "all", "anything", "all services", "any service", "services"}


def _summary(message: str, limit: int = 80) -> str:
    text = " ".join(message.split()).rstrip(".!? ")
    return text[:limit].rstrip() + "..." if len(text) > limit else text


BUSINESS_TOOLS = ("get_business_info", "get_tire_recommendation", "check_service_availability",
                  "record_customer_interest", "record_feedback", "delete_customer_data")


def _thread(config: RunnableConfig | None) -> str | None:
    """The conversation a tool call belongs to (LangChain injects the run's config)."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread) if thread else None


def business_tools(context: ToolContext) -> list[BaseTool]:
    """The TreadWise business tools, bound to `context` (its store and data files).

    The context may name other data files (`business_profile`, `tire_catalogue`, `coverage`);
    by default the packaged YAML files are used.
    """
    desk = BusinessDesk(context)
    return [StructuredTool.from_function(getattr(desk, name), parse_docstring=True)
            for name in BUSINESS_TOOLS]


class BusinessDesk:
    """The business tools' bodies, answering from the profile files and the context's store."""

    def __init__(self, context: ToolContext):
        self.context = context

    def get_business_info(self, topic: str) -> str:
        """Look up facts about TreadWise Tire Co.: services, mobile installation, Smart Tread
        tire monitoring, fleet services, tire recycling, areas served, opening hours, warranty,
        tire pressure, rotation and tire care, punctures, pricing and contact details. Use it
        for any question about the company.

        Args:
            topic: What the customer asks about, in their words, e.g. "opening hours",
                "Smart Tread", "where do you operate", "how much does it cost".
        """
        profile = load_business_profile(self.context.business_profile)
        if section := profile.find_section(topic):
            return f"{profile.name} - {section.render()}"
        overview = profile.sections.get("overview") or next(iter(profile.sections.values()))
        return (
            f"No specific section on {_quote(topic)}; here is the overview.\n"
            f"{profile.name} - {overview.render()}\n"
            f"Topics you can ask about: {', '.join(profile.topics())}."
        )

    def get_tire_recommendation(self, vehicle_type: str, usage: str) -> str:
        """Recommend 1-3 TreadWise tire lines, with size ranges and reasons, for a vehicle
        type and how it is driven.

        Args:
            vehicle_type: The vehicle, e.g. sedan, SUV, truck/pickup, van,
                commercial/fleet, EV (Tesla, electric car).
            usage: How it is driven, e.g. city, highway, mixed/everyday, off-road,
                winter/snow, performance/sport, towing.
        """
        catalogue = load_tire_catalogue(self.context.tire_catalogue)
        supported = (
            f"Supported vehicle types: {', '.join(catalogue.vehicles.names)}. "
            f"Usages: {', '.join(catalogue.usages.names)}."
        )
        vehicle = catalogue.vehicles.find(vehicle_type)
        if vehicle is None:
            return f"I don't recognise the vehicle type {_quote(vehicle_type)}. {supported}"
        wanted = catalogue.usages.find(usage)
        if wanted is None:
            reply = f"I don't recognise the usage {_quote(usage)}. {supported}"
            if fallback := catalogue.closest(vehicle, "mixed"):
                other, tires = fallback
                reply += f"\nAll-round picks for {_a(vehicle)} ({other} use):\n{_listing(tires)}"
            return reply
        if tires := catalogue.recommend(vehicle, wanted):
            return f"Recommended tires for {_a(vehicle)} ({wanted} use):\n{_listing(tires)}"
        note = catalogue.not_offered.get((vehicle, wanted), "")
        reply = f"We don't sell a tire line for {_a(vehicle)} used for {wanted}. {note}".rstrip()
        if alternative := catalogue.closest(vehicle, wanted):
            other, tires = alternative
            reply += f"\nClosest alternative - {_a(vehicle)} ({other} use):\n{_listing(tires)}"
        return f"{reply}\n{supported}"

    def check_service_availability(self, location: str, service_type: str) -> str:
        """Check whether a TreadWise service is offered in a city and how soon the next slot
        is; if not, name the nearest city that offers it.

        Args:
            location: The city or area, e.g. "Austin", "Fort Worth", "OKC".
            service_type: The service, e.g. mobile installation (tire change), rotation,
                repair (puncture, flat), balancing, Smart Tread setup (sensors), recycling;
                "any" lists everything offered there.
        """
        return availability(load_coverage(self.context.coverage), location, service_type)

    def record_customer_interest(self, email: str, name: str, message: str,
                                 replaces: str = "", *,
                                 config: RunnableConfig) -> str:
        """Save a customer's contact details and what they are interested in, so the sales
        team can follow up. Only call it with an e-mail address the customer gave as their own
        and only when they asked to be contacted.

        Args:
            email: The customer's e-mail address (one plain address, e.g. ana@example.com).
            name: The customer's name; an empty string if they did not give one.
            message: What they want, e.g. "fleet pricing for 12 vans in Dallas".
            replaces: When the customer corrects an address they gave earlier for the same
                request, that earlier address; otherwise leave it empty.
        """
        thread = _thread(config)
        try:
            # The store connects on first use, so reaching it can fail like a write.
            store = self.context.store
            result = (store.replace_lead(replaces, email, name, message, thread)
                      if replaces.strip() else store.add_lead(email, name, message, thread))
        except InvalidLead as exc:
            raise ToolException(f"Not saved: {exc}.") from exc
        except StoreUnavailable as exc:
            raise ToolException(f"I couldn't save that right now: {exc}.") from exc
        if replaces.strip() and result.stored:
            return (f"Updated: we'll contact {email.strip()} instead of {replaces.strip()} "
                    f"about {_summary(message)}.")
        # Whether another conversation gave the same request is nobody's business here:
        # "already on file" only for what this conversation asked before (no oracle).
        status = "Already on file" if result.duplicate and result.asked_before else "Saved"
        return f"{status}: we'll contact {email.strip()} about {_summary(message)}."

    def record_feedback(self, question: str, *, config: RunnableConfig) -> str:
        """Record a question you could not answer with the other tools, so TreadWise staff
        can follow up on it. Only the customer's own question, in their words.

        Args:
            question: The customer's question, in their words.
        """
        try:
            ref = self.context.store.add_feedback(question, _thread(config))
        except InvalidLead as exc:
            raise ToolException(f"Not saved: {exc}.") from exc
        except StoreUnavailable as exc:
            raise ToolException(f"I couldn't save that right now: {exc}.") from exc
        return f"Noted (ref #{ref}): the TreadWise team will look into this question and follow up."

    def delete_customer_data(self, *, config: RunnableConfig) -> str:
        """Delete what the customer gave in this conversation (their contact requests,
        questions and the conversation itself) when they withdraw consent or ask to delete,
        erase, remove or forget their data. Only call it when the customer asks for that
        themselves.
        """
        from treadwise.privacy.erasure import (
            ErasureReport,
            erase_records,
            given_addresses,
            remembered,
        )

        thread = _thread(config)
        if thread is None:
            return "Nothing to delete: this conversation has no id, so nothing was stored for it."
        # The addresses the customer gave in this conversation are theirs to erase; one typed
        # only in this request is not (an address is not erased on a visitor's word). The
        # conversation's memory is erased by the agent once the turn ends.
        given = given_addresses(remembered(self.context.memory, thread))
        try:
            erased = erase_records(thread, self.context.store, given)
        except StoreUnavailable as exc:
            raise ToolException(f"I couldn't delete anything right now: {exc}.") from exc
        report = ErasureReport(erased.leads, erased.feedback)
        if not report.anything:
            return "Nothing to delete: nothing was stored from this conversation."
        return (f"Deleted: {report.describe()}. What was deleted is gone from the store, and "
                "nobody will contact the customer.")


def _slot(lead_time: str) -> str:
    return f"next slot in {lead_time}" if lead_time[:1].isdigit() else f"next slot {lead_time}"


def availability(coverage: Coverage, location: str, service_type: str) -> str:
    city_name = coverage.places.find(location)
    service = coverage.services.find(service_type)
    if city_name is None:
        return _not_served(coverage, location, service)
    city = coverage.cities[city_name]
    offered = ", ".join(coverage.labels[s] for s in city.services) or "nothing yet"
    if service is None and " ".join(service_type.casefold().split()) in ANY_SERVICE:
        return f"Yes, we serve {city.name}: " + ", ".join(
            f"{coverage.labels[s]} ({_slot(t)})" for s, t in city.services.items()) + "."
    if service is None:
        return (
            f"I don't recognise the service {_quote(service_type)}. Services: "
            f"{', '.join(coverage.labels.values())}. In {city.name} we offer: {offered}."
        )
    label = coverage.labels[service]
    if lead_time := city.services.get(service):
        return f"Yes, {label} is available in {city.name} ({_slot(lead_time)})."
    reply = f"Sorry, {label} is not available in {city.name} yet"
    if nearest := coverage.nearest_offering(city.name, service):
        other, miles = nearest
        lead = _slot(other.services[service])
        return f"{reply}; nearest: {other.name}, about {miles:.0f} miles away ({lead})."
    return f"{reply}, nor anywhere else we serve."


def _not_served(coverage: Coverage, location: str, service: str | None) -> str:
    served = ", ".join(f"{c.name} ({c.region})" for c in coverage.cities.values())
    known = coverage.other_places.find(location)
    if known is None:
        return f"We don't serve {_quote(location)} yet. TreadWise currently serves: {served}."
    place: City = coverage.elsewhere[known]
    nearest = coverage.nearest_served(place, service)
    what = f" for {coverage.labels[service]}" if service else ""
    closest = " and ".join(f"{city.name} (about {miles:,.0f} miles away)"
                           for city, miles in nearest)
    return (f"We don't serve {place.name} ({place.region}) yet. The nearest cities we serve"
            f"{what}: {closest}. TreadWise currently serves: {served}.")
