"""Writes formats.json and samples.jsonl beside this file: credential formats no rule of the project names,
read off trufflehog's and Nosey Parker's detector patterns (see SOURCES.md), 20 fake samples of each drawn at
random from the documented alphabet and length (seed 44). Run once, before the rules changed:

    python3.11 bench/corpus/heldout_secrets/make_samples.py
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

HERE = Path(__file__).parent
SEED, PER_FORMAT = 44, 20
B62 = string.ascii_letters + string.digits
ALPHABETS = {
    "b62": B62,
    "b62_": B62 + "_-",
    "b62+": B62 + "+/@_-",
    "hex": "0123456789abcdef",
    "lower": string.ascii_lowercase + string.digits,
    "b64": B62 + "+/",
}
# (format, source, detector, shape). A shape is literal text with `{alphabet:length}` random parts, exactly
# as the detector's regex documents them. Source `th`: trufflehog pkg/detectors/<detector>; `np`: Nosey
# Parker's rule id. Excluded on purpose: formats gitleaks.toml or OWN_RULES name (their prefix or keyword is
# in the rule), the issue's own examples (CFPAT-, figd_, pat-na1-, phx_, nvapi-, pcsk_, tskey-api-, Zapier),
# what is no secret (Stripe pk_live_, dotdigital's user name, Blynk's client id) and bodies of hex or
# lowercase alone without a prefix (indistinguishable from a digest; see SOURCES.md).
PREFIXED = [
    ("bitbucket-datacenter", "th", "atlassiandatacenter/bitbucketdatacenter", "BBDC-{b62+:44}"),
    ("bannerbear", "th", "bannerbear/v2", "bb_pr_{hex:30}"),
    ("buildkite-user", "th", "buildkite/v2", "bkua_{lower:40}"),
    ("circleci-pat", "th", "circleci/v2", "CCIPAT_{b62:22}_{hex:40}"),
    ("cloudflare-global-v2", "th", "cloudflareglobalapikey/v2", "cfk_{b62:40}{hex:8}"),
    ("dockerhub-oat", "th", "dockerhub/v2", "dckr_oat_{b62_:32}"),
    ("figma-pat-v3", "th", "figmapersonalaccesstoken/v3", "figp_{b62_:44}"),
    ("fleetbase", "th", "fleetbase", "flb_live_{b62:20}"),
    ("flexport", "th", "flexport", "shltm_{b62_:40}"),
    ("flutterwave", "th", "flutterwave", "FLWSECK-{lower:32}-X"),
    ("klaviyo", "th", "klaviyo", "pk_{hex:34}"),
    ("langsmith", "th", "langsmith", "lsv2_pt_{hex:32}_{hex:10}"),
    ("newrelic-browser", "th", "newrelicbrowserkey", "NRBR-{hex:19}"),
    ("newrelic-insights-query", "th", "newrelicinsightsquerykey", "NRIQ-{b62_:25}"),
    ("pagarme", "th", "pagarme", "ak_live_{b62:30}"),
    ("pubnub-publish", "th", "pubnubpublishkey", "pub-c-{lower:8}-{lower:4}-{lower:4}-{lower:4}-{lower:12}"),
    ("ramp-secret", "th", "ramp", "ramp_sec_{b62:48}"),
    ("robinhood-crypto", "th", "robinhoodcrypto", "rh-api-{hex:8}-{hex:4}-{hex:4}-{hex:4}-{hex:12}"),
    ("rootly", "th", "rootly", "rootly_{hex:64}"),
    ("saladcloud", "th", "saladcloudapikey", "salad_cloud_{b62:5}_{b62:40}"),
    ("sonarcloud", "th", "sonarcloud/v2", "sqco_{b62:59}"),
    ("sourcegraph-cody", "th", "sourcegraphcody", "slk_{hex:64}"),
    ("ubidots", "th", "ubidots", "BBFF-{b62:30}"),
    ("aws-appsync", "np", "np.appsync.1", "da2-{lower:26}"),
    ("dependency-track", "np", "np.dtrack.1", "odt_{b62:40}"),
    ("firecrawl", "np", "np.firecrawl.1", "fc-{hex:32}"),
    ("jina", "np", "np.jina.1", "jina_{b62:60}"),
    ("newrelic-admin", "np", "np.newrelic.4", "NRAA-{hex:27}"),
    ("newrelic-rest", "np", "np.newrelic.7", "NRRA-{hex:42}"),
    ("pixie-api", "np", "np.newrelic.8", "px-api-{hex:8}-{hex:4}-{hex:4}-{hex:4}-{hex:12}"),
    ("pixie-deploy", "np", "np.newrelic.9", "px-dep-{hex:8}-{hex:4}-{hex:4}-{hex:4}-{hex:12}"),
    ("square-oauth-secret", "np", "np.square.2", "sq0csp-{b62_:43}"),
]
# Secrets in a URL or a connection string: the secret is the part after `secret=`.
URLS = [
    ("tines-webhook", "th", "tineswebhook", "https://{lower:8}.tines.com/webhook/{lower:32}/{lower:32}"),
    (
        "power-automate-workflow",
        "th",
        "powerautomate",
        "https://{lower:12}.12.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/"
        "{hex:32}/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={b62_:43}",
    ),
    ("azure-app-configuration", "th", "azureappconfigconnectionstring",
     "Endpoint=https://{lower:10}.azconfig.io;Id={b62:4}-l0-s0:{b62:20};Secret={b64:43}="),
]  # fmt: skip
# Keyword-gated detectors (trufflehog's `PrefixRegex(vendor) + \b([class]{n})\b`) whose body is a long run of
# upper case, lower case and digits: the first 22 by name, of those whose vendor gitleaks does not name.
KEYWORD_GATED = [
    ("abyssale", 40), ("accuweather", 32), ("airship", 91), ("alconost", 32), ("amadeus", 32), ("apideck", 40),
    ("apilayer", 32), ("apimetrics", 32), ("apitemplate", 39), ("artsy", 32), ("autodesk", 32), ("bitbar", 32),
    ("bitcoinaverage", 43), ("brandfetch", 40), ("calendarific", 32), ("calorieninja", 40), ("censys", 32),
    ("chatfuel", 128), ("clarifai", 32), ("clockify", 48), ("cloudelements", 43), ("clustdoc", 60),
]  # fmt: skip


def draw(shape: str, rng: random.Random) -> tuple[str, list[str]]:
    """A sample of `shape` and its random parts."""
    parts: list[str] = []

    def part(m: re.Match[str]) -> str:
        alphabet, length = ALPHABETS[m.group(1)], int(m.group(2))
        while True:  # a drawn body has every class its alphabet has, as real ones nearly always do
            body = "".join(rng.choice(alphabet) for _ in range(length))
            classes = [
                c for c in (string.ascii_uppercase, string.ascii_lowercase, string.digits) if set(c) & set(alphabet)
            ]
            if length < 16 or all(set(body) & set(c) for c in classes):
                break
        parts.append(body)
        return body

    return re.sub(r"\{(\w[\w+]*):(\d+)\}", part, shape), parts


def main() -> None:
    rng = random.Random(SEED)
    formats = [
        *({"format": f, "source": s, "detector": d, "shape": shape, "kind": "prefixed"} for f, s, d, shape in PREFIXED),
        *({"format": f, "source": s, "detector": d, "shape": shape, "kind": "url"} for f, s, d, shape in URLS),
        *({"format": v, "source": "th", "detector": v, "shape": f"{{b62:{n}}}", "kind": "keyword-gated"}
          for v, n in KEYWORD_GATED),
    ]  # fmt: skip
    # Half the formats tune thresholds, the other half is only ever measured: alternate by a shuffled order.
    order = sorted(range(len(formats)), key=lambda _: rng.random())
    for rank, index in enumerate(order):
        formats[index]["split"] = "tune" if rank % 2 == 0 else "held"
    rows = []
    for spec in formats:
        for n in range(PER_FORMAT):
            text, parts = draw(spec["shape"], rng)
            if spec["kind"] == "url":  # the secret: the random parts a URL's reader needs to call it
                secret_parts = parts[1:] if spec["format"] == "tines-webhook" else parts[-1:]
            else:
                secret_parts = parts
            rows.append({"format": spec["format"], "n": n, "token": text, "secrets": secret_parts})
    (HERE / "formats.json").write_text(json.dumps(formats, indent=1) + "\n")
    (HERE / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(len(formats), "formats,", len(rows), "samples")


if __name__ == "__main__":
    main()
