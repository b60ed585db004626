"""The mobile network profiles every benchmark shapes its links with: one table, read by
bench/network.py (DevTools emulation of a first visit), bench/report_page.py and
bench/shaper.py (the user-space link).

Downlink and round trip are issue 13's three profiles, unchanged. Each uplink comes from
a published throttling preset whose *downlink* is the profile's, so that the pair
describes one connection rather than two (issue 45: `slow4g`'s uplink was 0.75 Mbit/s,
which belongs to a 1.6 Mbit/s preset, and a low uplink flatters whichever client sends
fewer bytes):

| profile | down | up | RTT | uplink from (that preset's down / up) |
|---|---|---|---|---|
| `4g` | 9 Mbit/s | 1.5 Mbit/s | 85 ms | Chrome DevTools "Fast 4G" (9 / 1.5 Mbit/s) [1] |
| `slow4g` | 4 Mbit/s | 3 Mbit/s | 150 ms | Chrome DevTools "Regular 4G" (4 / 3 Mbit/s) [2] |
| `3g` | 1.6 Mbit/s | 0.768 Mbit/s | 300 ms | WebPageTest "3G" (1.6 / 0.768 Mbit/s, 300 ms: the whole profile) [3] |

[1] devtools-frontend, front_end/core/sdk/NetworkManager.ts, `Fast4GConditions`: 9 Mbps
    down, 1.5 Mbps up, 60 ms target RTT (Puppeteer's `PredefinedNetworkConditions`
    copies it: "9 Mbps down", "1.5 Mbps up"). DevTools derates each throughput by 0.9
    and multiplies the latency (×2.75) because it throttles per request, above TCP; a
    link shaped below TCP (bench/shaper.py) takes the target figures as they are.
[2] devtools-frontend, front_end/components/NetworkConditionsSelector.js (DevTools'
    presets before today's Slow/Fast 3G/4G), "Regular 4G": `download: 4 * 1024 * 1024 /
    8, upload: 3 * 1024 * 1024 / 8, latency: 20`: Chromium's preset with a 4 Mbit/s
    downlink. Its units are 1024-based (4.19 / 3.15 Mbit/s); the profile keeps its
    round 4 and takes 3 beside it, the same ratio. Its RTT (20 ms) is not taken: the
    profile's 150 ms stays. Today's DevTools and
    Lighthouse "Slow 4G" (`Slow4GConditions`; Lighthouse docs/throttling.md, "1.6Mbps
    down / 750 Kbps up", 150 ms) is a 1.6 Mbit/s link: its 0.75 Mbit/s uplink is the
    `3g` row's kind, not this one's.
[3] WebPageTest, www/settings/connectivity.ini.sample, `[3G]`: bwIn=1600000,
    bwOut=768000, latency=300.

Each uplink is at most its downlink (1/6, 3/4, ~1/2), as on real mobile networks, where
the uplink gets fewer resources.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROFILES", "Profile"]


@dataclass(frozen=True)
class Profile:
    """One mobile link: throughput each way and the round trip, as a phone sees them."""

    down_mbps: float
    up_mbps: float
    rtt_ms: float

    @property
    def one_way_s(self) -> float:
        """The delay of each direction: half the round trip (a symmetric path)."""
        return self.rtt_ms / 2000


PROFILES: dict[str, Profile] = {
    "4g": Profile(down_mbps=9.0, up_mbps=1.5, rtt_ms=85),
    "slow4g": Profile(down_mbps=4.0, up_mbps=3.0, rtt_ms=150),
    "3g": Profile(down_mbps=1.6, up_mbps=0.768, rtt_ms=300),
}
