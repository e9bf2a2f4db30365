#!/usr/bin/env python3
"""Writes samples/replay/: a recorded log of a few thousand events and the directory it ran against.

Deterministic (seeded), so the committed files are reproducible: python3 scripts/make-replay-sample.py.
Three days of traffic for 200 users in seven locales (two of which the catalog lacks, so the replay
report shows missing translations), with a chat burst that trips the messages throttle (digest), a
marketing campaign that trips its weekly limit, night-time traffic inside quiet hours, directory
changes inside the log, and a few poison events.
"""
import hashlib
import json
import os
import random
from datetime import datetime, timedelta, timezone

rng = random.Random(20261116)
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples", "replay")
os.makedirs(root, exist_ok=True)

LOCALES = [("nb-NO", "Europe/Oslo"), ("en-GB", "Europe/London"), ("de-DE", "Europe/Berlin"), ("pl", "Europe/Warsaw"),
           ("ar", "Africa/Cairo"), ("fr-FR", "Europe/Paris"), ("sv-SE", "Europe/Stockholm")]
CURRENCY = {"nb-NO": "NOK", "en-GB": "GBP", "de-DE": "EUR", "pl": "PLN", "ar": "EGP", "fr-FR": "EUR", "sv-SE": "SEK"}
START = datetime(2026, 11, 16, 6, 0, tzinfo=timezone.utc)
USERS = [f"u-{n:04d}" for n in range(1, 201)]
NAMES = ["Ana", "Kasia", "Jonas", "Leila", "Ingrid", "Tom", "Marek", "Sofia", "Omar", "Heidi"]


def ts(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event(eid, source, etype, moment, data):
    return {"specversion": "1.0", "id": eid, "source": source, "type": etype, "time": ts(moment),
            "datacontenttype": "application/json", "data": data}


def token(provider, user, n):
    if provider == "apns":
        return hashlib.sha256(f"{user}/{n}".encode()).hexdigest()
    if provider == "fcm":
        return f"fcm-{user}-{n}:APA91b{rng.getrandbits(64):016x}"
    return f"ExponentPushToken[{user}-{n}-{rng.getrandbits(32):08x}]"


directory = []
profiles = {}
for index, user in enumerate(USERS):
    locale, zone = LOCALES[index % len(LOCALES)]
    profiles[user] = locale
    at = START - timedelta(days=10, minutes=-index)
    directory.append(event(f"dir-{user}-p", "/accounts", "user.profile.updated", at,
                           {"userId": user, "locale": locale, "timeZone": zone}))
    providers = [["apns"], ["fcm"], ["expo"], ["apns", "fcm"]][index % 4]
    for n, provider in enumerate(providers):
        platform = "ios" if provider == "apns" else "android"
        directory.append(event(f"dir-{user}-d{n}", "/accounts", "device.registered", at + timedelta(seconds=n + 1),
                               {"userId": user, "deviceId": f"{platform}-{n}", "platform": platform,
                                "provider": provider, "token": token(provider, user, n), "appId": "no.getdrop.app",
                                "environment": "production", "locale": locale}))
    prefs = {"userId": user, "pushEnabled": index % 50 != 49}
    categories = {}
    if index % 4 == 0:
        categories["marketing"] = True
    if index % 23 == 5:
        categories["messages"] = False
    if categories:
        prefs["categories"] = categories
    if index % 5 == 2:
        prefs["quietHours"] = {"enabled": True, "start": "22:00", "end": "07:00", "timezone": zone}
    if len(prefs) > 2 or index % 50 == 49:
        directory.append(event(f"dir-{user}-q", "/accounts", "user.preferences.updated", at + timedelta(seconds=9),
                               prefs))

events = []
counter = 0


def add(etype, moment, data, source):
    global counter
    counter += 1
    events.append(event(f"evt-{counter:05d}", source, etype, moment, data))


def money(user, low, high):
    return {"amount": round(rng.uniform(low, high), 2), "currency": CURRENCY[profiles[user]]}


span = 3 * 24 * 3600
for _ in range(2300):
    moment = START + timedelta(seconds=rng.randrange(span))
    user = rng.choice(USERS)
    kind = rng.choices(["order.confirmed", "order.shipped", "payment.received", "payment.failed", "security.login",
                        "message.received", "promo.offer"], [25, 15, 12, 4, 5, 35, 4])[0]
    order = f"ord-{rng.getrandbits(24):06x}"
    if kind == "order.confirmed":
        add(kind, moment, {"userId": user, "orderId": order, "total": money(user, 49, 2500),
                           "itemCount": rng.randint(1, 6)}, "/orders")
    elif kind == "order.shipped":
        add(kind, moment, {"userId": user, "orderId": order, "carrier": rng.choice(["DHL", "Posten", "InPost"]),
                           "estimatedDelivery": ts(moment + timedelta(days=2)),
                           "trackingUrl": f"https://track.example/{order}"}, "/orders")
    elif kind == "payment.received":
        add(kind, moment, {"userId": user, "paymentId": f"pay-{rng.getrandbits(24):06x}",
                           "amount": money(user, 10, 900), "senderName": rng.choice(NAMES)}, "/payments")
    elif kind == "payment.failed":
        add(kind, moment, {"userId": user, "paymentId": f"pay-{rng.getrandbits(24):06x}",
                           "amount": money(user, 10, 900), "reason": "card_declined"}, "/payments")
    elif kind == "security.login":
        add(kind, moment, {"userId": user, "deviceName": rng.choice(["iPhone 16", "Pixel 9", "MacBook Pro"]),
                           "location": rng.choice(["Oslo, Norway", "Berlin, Germany", "Kraków, Poland"])},
            "/identity")
    elif kind == "message.received":
        add(kind, moment, {"recipientIds": [user], "chatId": f"chat-{rng.randrange(40)}",
                           "senderName": rng.choice(NAMES), "preview": "Are we still on for tonight?"}, "/chat")
    else:
        add(kind, moment, {"userIds": [user], "offerId": f"offer-{rng.randrange(5)}", "headline": "Weekend deal",
                           "discountPercent": rng.choice([10, 20, 30]), "validUntil": ts(moment + timedelta(days=5))},
            "/marketing")

# A group chat that gets lively: 130 messages to u-0004 and u-0009 in 25 minutes (100 per hour, then
# one digest when the window ends).
burst = START + timedelta(hours=30, minutes=5)
for n in range(130):
    add("message.received", burst + timedelta(seconds=n * 11),
        {"recipientIds": ["u-0004", "u-0009"], "chatId": "chat-party", "senderName": NAMES[n % len(NAMES)],
         "preview": f"message {n + 1}"}, "/chat")

# A marketing campaign sent to every opted-in user four times in three days (2 per 7 days, then dropped).
for wave in range(4):
    moment = START + timedelta(hours=10 + wave * 16)
    add("promo.offer", moment, {"userIds": USERS[0:200:4], "offerId": f"campaign-{wave}", "headline": "Black Friday",
                                "discountPercent": 30, "validUntil": ts(moment + timedelta(days=7))}, "/marketing")

# Night-time orders for users with quiet hours (22:00-07:00 local): deferred to the morning.
for n, user in enumerate(USERS[2:200:5][:40]):
    moment = START + timedelta(days=1, hours=17, minutes=n * 3)  # 23:00-01:00 in Oslo
    add("order.confirmed", moment, {"userId": user, "orderId": f"ord-night-{n}", "total": money(user, 99, 999),
                                    "itemCount": 1}, "/orders")

events.sort(key=lambda e: (e["time"], e["id"]))
lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]

# Directory changes inside the log: a new phone registered, a token invalidated by a provider.
mid = len(lines) // 2
new_device = event("dir-live-1", "/accounts", "device.registered", datetime.fromisoformat(events[mid]["time"][:-1] + "+00:00"),
                   {"userId": "u-0101", "deviceId": "ios-new", "platform": "ios", "provider": "apns",
                    "token": "0101" * 16, "appId": "no.getdrop.app", "environment": "production",
                    "locale": "en-GB"})
lines.insert(mid, json.dumps(new_device, separators=(",", ":")))

# Poison: not JSON, an event type no kind handles, a required field missing, not a CloudEvent.
for offset, text in [(100, "this line is not JSON"),
                     (700, json.dumps(event("evt-poison-1", "/orders", "order.teleported",
                                            datetime.fromisoformat(events[700]["time"][:-1] + "+00:00"),
                                            {"userId": "u-0001"}), separators=(",", ":"))),
                     (1400, json.dumps(event("evt-poison-2", "/orders", "order.confirmed",
                                             datetime.fromisoformat(events[1400]["time"][:-1] + "+00:00"),
                                             {"userId": "u-0002", "itemCount": 1}), separators=(",", ":"))),
                     (2100, '{"hello":"not a CloudEvent"}')]:
    lines.insert(offset, text)

with open(os.path.join(root, "events.jsonl"), "w", encoding="utf-8") as out:
    out.write("\n".join(lines) + "\n")
with open(os.path.join(root, "directory.jsonl"), "w", encoding="utf-8") as out:
    out.write("\n".join(json.dumps(e, separators=(",", ":")) for e in directory) + "\n")
print(f"{len(lines)} events, {len(directory)} directory changes → {root}")
