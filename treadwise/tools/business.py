"""Business tools: company facts, tire recommendations, service coverage, leads and feedback.

Each returns its words for the model and a typed artifact (tools/business_results.py).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

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
from treadwise.tools.artifacts import worded
from treadwise.tools.business_results import (
    BusinessInfo,
    ErasureResult,
    FeedbackResult,
    InterestResult,
    Nearby,
    Offer,
    ServiceAvailability,
    Tire,
    TireRecommendation,
)
from treadwise.tools.methods import method_tools

# Words that ask what a city offers rather than naming one service.
ANY_SERVICE = {"", "any", "all", "anything", "all services", "any service", "services"}


def _summary(message: str, limit: int = 80) -> str:
    text = " ".join(message.split()).rstrip(".!? ")
    return text[:limit].rstrip() + "..." if len(text) > limit else text


def _tires(tires: tuple[TireModel, ...]) -> list[Tire]:
    return [Tire(model=t.model, sizes=t.sizes, reason=t.reason) for t in tires]


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
    return method_tools(BusinessDesk(context), BUSINESS_TOOLS)


class BusinessDesk:
    """The business tools' bodies, answering from the profile files and the context's store."""

    def __init__(self, context: ToolContext):
        self.context = context

    def get_business_info(self, topic: str) -> tuple[str, BusinessInfo]:
        """Look up facts about TreadWise Tire Co.: services, mobile installation, Smart Tread
        tire monitoring, fleet services, tire recycling, areas served, opening hours, warranty,
        tire pressure, rotation and tire care, punctures, pricing and contact details. Use it
        for any question about the company.

        Args:
            topic: What the customer asks about, in their words, e.g. "opening hours",
                "Smart Tread", "where do you operate", "how much does it cost".
        """
        profile = load_business_profile(self.context.business_profile)
        found = profile.find_section(topic)
        section = found or profile.sections.get("overview") or next(
            iter(profile.sections.values()))
        return worded(BusinessInfo(
            topic=topic, company=profile.name, section=section.key, title=section.title,
            text=section.text, facts=list(section.facts), matched=found is not None,
            topics=[] if found else profile.topics()))

    def get_tire_recommendation(self, vehicle_type: str,
                                usage: str) -> tuple[str, TireRecommendation]:
        """Recommend 1-3 TreadWise tire lines, with size ranges and reasons, for a vehicle
        type and how it is driven.

        Args:
            vehicle_type: The vehicle, e.g. sedan, SUV, truck/pickup, van,
                commercial/fleet, EV (Tesla, electric car).
            usage: How it is driven, e.g. city, highway, mixed/everyday, off-road,
                winter/snow, performance/sport, towing.
        """
        catalogue = load_tire_catalogue(self.context.tire_catalogue)
        asked: dict[str, Any] = {"vehicle_type": vehicle_type, "usage": usage,
                 "vehicles": list(catalogue.vehicles.names), "usages": list(catalogue.usages.names)}
        vehicle = catalogue.vehicles.find(vehicle_type)
        if vehicle is None:
            return worded(TireRecommendation(outcome="unknown_vehicle", **asked))
        wanted = catalogue.usages.find(usage)
        if wanted is not None and (tires := catalogue.recommend(vehicle, wanted)):
            return worded(TireRecommendation(outcome="recommended", vehicle=vehicle, use=wanted,
                                             tires=_tires(tires), **asked))
        # An unknown usage gets all-round picks; a usage not sold for, the closest one.
        other, picks = catalogue.closest(vehicle, wanted or "mixed") or (None, ())
        return worded(TireRecommendation(
            outcome="unknown_usage" if wanted is None else "not_offered", vehicle=vehicle,
            use=wanted, alternative_use=other, alternatives=_tires(picks),
            note=catalogue.not_offered.get((vehicle, wanted), "") if wanted else "", **asked))

    def check_service_availability(self, location: str,
                                   service_type: str) -> tuple[str, ServiceAvailability]:
        """Check whether a TreadWise service is offered in a city and how soon the next slot
        is; if not, name the nearest city that offers it.

        Args:
            location: The city or area, e.g. "Austin", "Fort Worth", "OKC".
            service_type: The service, e.g. mobile installation (tire change), rotation,
                repair (puncture, flat), balancing, Smart Tread setup (sensors), recycling;
                "any" lists everything offered there.
        """
        return worded(availability(load_coverage(self.context.coverage), location,
                                   service_type))

    def record_customer_interest(self, email: str, name: str, message: str,
                                 replaces: str = "", *,
                                 config: RunnableConfig) -> tuple[str, InterestResult]:
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
            return worded(InterestResult(outcome="updated", email=email.strip(),
                                         replaced=replaces.strip(), about=_summary(message)))
        # Whether another conversation gave the same request is nobody's business here:
        # "already on file" only for what this conversation asked before (no oracle).
        again = result.duplicate and result.asked_before
        return worded(InterestResult(outcome="already_on_file" if again else "saved",
                                     email=email.strip(), about=_summary(message)))

    def record_feedback(self, question: str, *,
                        config: RunnableConfig) -> tuple[str, FeedbackResult]:
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
        return worded(FeedbackResult(ref=ref))

    def delete_customer_data(self, *, config: RunnableConfig) -> tuple[str, ErasureResult]:
        """Delete what the customer gave in this conversation (their contact requests,
        questions and the conversation itself) when they withdraw consent or ask to delete,
        erase, remove or forget their data. Only call it when the customer asks for that
        themselves.
        """
        from treadwise.privacy.erasure import erase_records, given_addresses, remembered

        thread = _thread(config)
        if thread is None:
            return worded(ErasureResult(outcome="no_thread"))
        # The addresses the customer gave in this conversation are theirs to erase; one typed
        # only in this request is not (an address is not erased on a visitor's word). The
        # conversation's memory is erased by the agent once the turn ends.
        given = given_addresses(remembered(self.context.memory, thread))
        try:
            erased = erase_records(thread, self.context.store, given)
        except StoreUnavailable as exc:
            raise ToolException(f"I couldn't delete anything right now: {exc}.") from exc
        return worded(ErasureResult.of(erased))


def availability(coverage: Coverage, location: str, service_type: str) -> ServiceAvailability:
    """Whether `service_type` is offered in `location`, as the coverage file says."""
    asked: dict[str, Any] = {"location": location, "service_type": service_type}
    city_name = coverage.places.find(location)
    service = coverage.services.find(service_type)
    label = coverage.labels[service] if service else None
    if city_name is None:
        return _not_served(coverage, location, service, asked)
    city = coverage.cities[city_name]
    offered = [Offer(service=coverage.labels[s], next_slot=t) for s, t in city.services.items()]
    if service is None:
        wildcard = " ".join(service_type.casefold().split()) in ANY_SERVICE
        return ServiceAvailability(outcome="listing" if wildcard else "unknown_service",
                                   city=city.name, region=city.region, offered=offered,
                                   services=list(coverage.labels.values()), **asked)
    if lead_time := city.services.get(service):
        return ServiceAvailability(outcome="available", city=city.name, region=city.region,
                                   service=service, label=label, next_slot=lead_time,
                                   offered=offered, **asked)
    nearest = coverage.nearest_offering(city.name, service)
    return ServiceAvailability(
        outcome="unavailable", city=city.name, region=city.region, service=service, label=label,
        offered=offered, **asked,
        nearest=[Nearby(city=other.name, region=other.region, miles=miles,
                        next_slot=other.services[service])
                 for other, miles in ([nearest] if nearest else [])])


def _not_served(coverage: Coverage, location: str, service: str | None,
                asked: dict[str, Any]) -> ServiceAvailability:
    served = [f"{c.name} ({c.region})" for c in coverage.cities.values()]
    label = coverage.labels[service] if service else None
    known = coverage.other_places.find(location)
    if known is None:
        return ServiceAvailability(outcome="not_served", service=service, label=label,
                                   served=served, **asked)
    place: City = coverage.elsewhere[known]
    nearest = [Nearby(city=city.name, region=city.region, miles=miles,
                      next_slot=city.services.get(service) if service else None)
               for city, miles in coverage.nearest_served(place, service)]
    return ServiceAvailability(outcome="not_served", city=place.name, region=place.region,
                               service=service, label=label, nearest=nearest, served=served,
                               **asked)
