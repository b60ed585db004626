"""The mobile network profiles every benchmark shapes its links with: one table, read by
bench/network.py (DevTools emulation of a first visit), bench/report_page.py and
bench/shaper.py (the user-space link).

Downlink and round trip are issue 13's three profiles, unchanged. Uplinks were added for
the shaped link (issue 26), each taken from a published throttling preset whose downlink
matches the profile's, so that the pair describes one connection rather than two:

| profile | down | up | RTT | uplink from |
|---|---|---|---|---|
| `4g` | 9 Mbit/s | 1.5 Mbit/s | 85 ms | Chrome DevTools "Fast 4G" (9 Mbit/s down, 1.5 Mbit/s up) [1] |
| `slow4g` | 4 Mbit/s | 0.75 Mbit/s | 150 ms | Chrome DevTools / Lighthouse "Slow 4G" (0.75 Mbit/s up at the same 150 ms RTT) [1][2] |
| `3g` | 1.6 Mbit/s | 0.768 Mbit/s | 300 ms | WebPageTest "3G" (1.6 Mbit/s / 768 kbit/s, 300 ms RTT: the whole profile) [3] |

[1] devtools-frontend, front_end/core/sdk/NetworkManager.ts: `Fast4GConditions` (9 Mbps
    down, 1.5 Mbps up, 60 ms target RTT) and `Slow4GConditions` (1.6 Mbps down, 750 kbps
    up, 150 ms target RTT). DevTools then derates each throughput by 0.9 and multiplies
    the latency (×2.75, ×3.75) because it throttles per request, above TCP; a link
    shaped below TCP (bench/shaper.py) takes the target figures as they are.
[2] Lighthouse, docs/throttling.md: "1.6Mbps down / 750 Kbps up", 150 ms, described as
    roughly the bottom 25% of 4G connections.
[3] WebPageTest, www/settings/connectivity.ini.sample, `[3G]`: bwIn=1600000,
    bwOut=768000, latency=300.

Every uplink is a fraction of its downlink (1/6, 3/16, ~1/2), as on real mobile networks,
where the uplink gets fewer resources; the issue's "often around 1 Mbit/s" sits between
the first two.
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
    "slow4g": Profile(down_mbps=4.0, up_mbps=0.75, rtt_ms=150),
    "3g": Profile(down_mbps=1.6, up_mbps=0.768, rtt_ms=300),
}
