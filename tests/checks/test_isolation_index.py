"""The isolation check's lookup tables give what a scan of every subnet/gateway gives."""

import ipaddress
import random

from railonly.emulation.checks import judge, probe


def _overlaps_scan(route: str, prefix: str) -> bool:
    route = "0.0.0.0/0" if route == "default" else route
    try:
        return ipaddress.ip_network(route, strict=False).overlaps(ipaddress.ip_network(prefix, strict=False))
    except ValueError:
        return False


def _cidr(rnd: random.Random) -> str:
    c = rnd.random()
    if c < 0.05:
        return "default"
    if c < 0.08:
        return "not-a-prefix"
    if c < 0.1:
        return f"fd00::/{rnd.randint(8, 64)}"
    return f"{rnd.choice([10, 172])}.{rnd.randint(0, 3)}.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}/{rnd.randint(8, 32)}"


def test_foreign_subnets_a_route_overlaps_match_a_scan():
    rnd = random.Random(7)
    for _ in range(300):
        foreign = tuple(_cidr(rnd) for _ in range(rnd.randint(0, 30)))
        index = judge._Subnets(foreign)
        for _ in range(30):
            route = _cidr(rnd)
            assert index.hits(route) == [p for p in foreign if _overlaps_scan(route, p)], (route, foreign)


def test_gateway_of_a_subnet_is_the_first_listed_gateway_on_it():
    rnd = random.Random(11)

    def addr() -> str:
        return f"10.{rnd.randint(0, 3)}.{rnd.randint(0, 3)}.{rnd.randint(0, 255)}"

    for _ in range(200):
        gws = [addr() for _ in range(40)] + ["fd00::1", "bogus"]
        table = probe.Gateways(gws)
        for _ in range(30):
            plen, ip = rnd.randint(16, 31), addr()
            net = ipaddress.ip_interface(f"{ip}/{plen}").network
            want = next((g for g in gws if g != "bogus" and ipaddress.ip_address(g) in net), None)
            assert table.of(plen, ip) == want
