"""Device facts about ports: names per platform and SerDes lanes per speed."""

from __future__ import annotations

# Lanes of one port at a given speed on current switch ASICs (50G/100G SerDes).
LANES_PER_PORT = {100: 4, 200: 4, 400: 8, 800: 8}


def lanes(gbps: int) -> int:
    return LANES_PER_PORT.get(int(gbps), 8)


def switch_port(platform: str, index: int, gbps: int) -> str:
    """Port name as the switch's OS prints it.

    SONiC numbers ports by their first lane (Ethernet0, Ethernet8, ...); EOS by
    front-panel position from 1 (Ethernet1, ...). Both are valid Linux
    interface names, so the lab uses them unchanged.
    """
    if platform == "sonic":
        return f"Ethernet{index * lanes(gbps)}"
    return f"Ethernet{index + 1}"


def fabric_port(design, tier: int, platform: str, index: int) -> str:
    """Port `index` of a tier-`tier` switch: the catalog platform's breakout name when the
    design names a model (catalog.Platform.port_name), otherwise :func:`switch_port`."""
    model = design.model_of_tier(tier)
    if model is None:
        return switch_port(platform, index, design.nic_gbps)
    return model.port_name(design.breakout, platform, index)


def port_names(fab, tier: int, platform: str) -> list[str]:
    """Every port name of a tier-`tier` switch of `platform`, by index (its radix of them): the
    same list for thousands of switches, named once per fabric graph (`fab`, kept on it, so
    the build and the switch views in forked workers share it)."""
    cache = fab.__dict__.setdefault("_port_names", {})
    names = cache.get((tier, platform))
    if names is None:
        d = fab.design
        names = cache[(tier, platform)] = [fabric_port(d, tier, platform, i) for i in range(d.radix)]
    return names


GPU_RAIL_PORT = "eth1"  # the GPU's NIC (eth0 is containerlab's management port)
GPU_HB_PORT = "hb0"  # the GPU's HB (NVLink) port


def hb_port(rank: int) -> str:
    return f"gpu{rank}"
