"""``rdma-fabric``: a recorded folder for ``aiplat diagnose rdma`` (constructed, not measured).

Four 8-GPU nodes (``gpu-1`` .. ``gpu-4``), eight NDR InfiniBand rails each (``mlx5_0`` ..
``mlx5_7``, 400 Gb/s) and one RoCE storage interface (``ens1f0np0``), recorded in the layout
``aiplat diagnose rdma`` reads, each file in its tool's format (ibstat; the sysfs counters as
``grep -H .`` prints them; ``ethtool -S``; perftest's ``ib_write_bw --report_gbits``;
``all_reduce_perf`` across the four nodes). Five faults are planted:

- ``gpu-2`` ``mlx5_3``: ib_write_bw 183 Gb/s where the other rails reach ~389 (a slow rail);
- ``gpu-3`` ``mlx5_5``: symbol errors, link error recoveries and three link-downs (a bad
  cable that flaps);
- ``gpu-4`` ``mlx5_6``: Active at 200 Gb/s where its peers run at 400 (a degraded link);
- ``gpu-1`` ``ens1f0np0``: the NIC's pause storm watchdog fired and it sent 100x the pause
  frames of the other nodes (a host that stopped draining its queue);
- the all-reduce across the four nodes reaches 236 GB/s busbw against 400 GB/s of rails.

The numbers are illustrative (healthy rails at 97 % of the line rate, as published
ib_write_bw runs on NDR show), chosen so that each fault is the only explanation of its
symptom.
"""

from __future__ import annotations

from pathlib import Path

NODES = ("gpu-1", "gpu-2", "gpu-3", "gpu-4")
RAILS = 8
STORAGE_IF = "ens1f0np0"


def _ibstat(node: str) -> str:
    out = []
    for r in range(RAILS):
        rate = "200" if (node, r) == ("gpu-4", 6) else "400"
        guid = f"0x{0xa088c20300f1a000 + 16 * NODES.index(node) + r:016x}"
        out += [f"CA 'mlx5_{r}'", "\tCA type: MT4129", "\tNumber of ports: 1",
                "\tFirmware version: 28.42.1000", "\tHardware version: 0",
                f"\tNode GUID: {guid}", f"\tSystem image GUID: {guid}", "\tPort 1:",
                "\t\tState: Active", "\t\tPhysical state: LinkUp", f"\t\tRate: {rate}",
                f"\t\tBase lid: {100 + 10 * NODES.index(node) + r}", "\t\tLMC: 0",
                "\t\tSM lid: 1", "\t\tCapability mask: 0xa751e84a", f"\t\tPort GUID: {guid}",
                "\t\tLink layer: InfiniBand"]
    return "\n".join(out) + "\n"


def _counters(node: str) -> str:
    lines = []
    for r in range(RAILS):
        bad = (node, r) == ("gpu-3", 5)
        values = {"symbol_error": 4411 if bad else 0,
                  "link_error_recovery": 12 if bad else 0,
                  "link_downed": 3 if bad else 0,
                  "port_rcv_errors": 0, "port_rcv_remote_physical_errors": 0,
                  "local_link_integrity_errors": 0, "port_xmit_discards": 0,
                  "port_xmit_wait": 18_000 + 700 * r}
        lines += [f"/sys/class/infiniband/mlx5_{r}/ports/1/counters/{k}:{v}"
                  for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _ethtool(node: str) -> str:
    storm = node == "gpu-1"
    stats = {"rx_bytes_phy": 81_442_310_112, "tx_bytes_phy": 79_301_554_980,
             "rx_symbol_err_phy": 0, "rx_crc_errors_phy": 0, "rx_discards_phy": 0,
             "rx_corrected_bits_phy": 1_204 + NODES.index(node),
             "link_down_events_phy": 0,
             "rx_pause_ctrl_phy": 410 + NODES.index(node),
             "tx_pause_ctrl_phy": 1_266_552 if storm else 12_400 + NODES.index(node),
             "rx_prio3_pause": 410 + NODES.index(node),
             "tx_prio3_pause": 1_266_552 if storm else 12_400 + NODES.index(node),
             "tx_pause_storm_warning_events": 7 if storm else 0,
             "tx_pause_storm_error_events": 0,
             "np_cnp_sent": 52_100 + NODES.index(node), "rp_cnp_handled": 48_900,
             "np_ecn_marked_roce_packets": 61_000}
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in stats.items())


def _write_bw(node: str, rail: int) -> str:
    avg = 183.41 if (node, rail) == ("gpu-2", 3) else 388.9 - 0.13 * rail
    peak = avg + 0.6
    return "\n".join([
        "-" * 87, "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : mlx5_{rail}",
        " Number of qps   : 1\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF", " PCIe relax order: ON",
        " ibv_wr* API     : ON", " TX depth        : 128", " CQ Moderation   : 1",
        " Mtu             : 4096[B]", " Link type       : IB", " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", "-" * 87,
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
        f" 65536      5000             {peak:.2f}             {avg:.2f}\t\t   "
        f"{avg * 1e9 / 8 / 65536 / 1e6:.6f}",
        "-" * 87, ""])


def _nccl() -> str:
    lines = ["# nThread 1 nGpus 1 minBytes 268435456 maxBytes 8589934592 step: 2(factor) "
             "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0", "#",
             "# Using devices"]
    for i, node in enumerate(NODES):
        for g in range(8):
            rank = 8 * i + g
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {4100 + rank:6d} on {node:>10} "
                         f"device  {g} [0000:{0x18 + 0x10 * g:02x}:00] NVIDIA H100 80GB HBM3")
    lines += ["#",
              "#                                                              out-of-place    "
              "                   in-place          ",
              "#       size         count      type   redop    root     time   algbw   busbw "
              "#wrong     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)  "
              "          (us)  (GB/s)  (GB/s)       "]
    size = 268435456
    for busbw in (201.30, 219.84, 229.12, 233.87, 235.96, 236.40):
        algbw = busbw * 32 / (2 * 31)
        t = size / algbw / 1e3
        lines.append(f"  {size:10d}  {size // 4:12d}     float     sum      -1  {t:7.1f}  "
                     f"{algbw:6.2f}  {busbw:6.2f}      0  {t * 1.004:7.1f}  "
                     f"{algbw / 1.004:6.2f}  {busbw / 1.004:6.2f}      0")
        size *= 2
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 226.08 ", "#", ""]
    return "\n".join(lines)


def rdma_fabric(dest: Path) -> Path:
    """Write the recorded folder into ``dest`` (an empty directory) and return it."""
    for node in NODES:
        d = dest / node
        d.mkdir()
        (d / "ibstat.txt").write_text(_ibstat(node))
        (d / "ib-counters.txt").write_text(_counters(node))
        (d / f"ethtool-S-{STORAGE_IF}.txt").write_text(_ethtool(node))
        for r in range(RAILS):
            (d / f"ib_write_bw-mlx5_{r}.txt").write_text(_write_bw(node, r))
    (dest / "nccl-all-reduce-4x8.txt").write_text(_nccl())
    return dest
