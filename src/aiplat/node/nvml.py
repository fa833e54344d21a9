"""GPU details through NVML (``nvidia-ml-py``, the optional ``nvml`` extra).

Imported lazily: a node without the library or the driver still gets a full inventory from
sysfs, just without ``gpu_details``. Every NVML call is guarded on its own because older
drivers and some GPUs (consumer boards, vGPU) answer ``NotSupported`` for single fields;
one unsupported field must not hide the others.
"""

from __future__ import annotations

import importlib
from typing import Any

from aiplat.node.inventory import GpuDetail, NvLink, RemappedRows
from aiplat.node.pciaddr import normalise

CLOCK_REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_clock_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_REASON_BITS.items() if mask & bit]


def _call(fn: Any, *args: Any) -> Any:
    """One NVML query; None when the field is not supported (or the call fails)."""
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the field is simply unknown
        return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_nvml() -> tuple[list[GpuDetail], str | None, str | None] | None:
    """GPU details, driver version, CUDA version; None when NVML cannot be used here."""
    try:
        nv: Any = importlib.import_module("pynvml")
    except ImportError:
        return None
    try:
        nv.nvmlInit()
    except Exception:
        return None
    try:
        return _read(nv)
    finally:
        _call(nv.nvmlShutdown)


def _read(nv: Any) -> tuple[list[GpuDetail], str | None, str | None]:
    driver = _call(nv.nvmlSystemGetDriverVersion)
    cuda_int = _call(nv.nvmlSystemGetCudaDriverVersion_v2)
    cuda = f"{cuda_int // 1000}.{(cuda_int % 1000) // 10}" if cuda_int else None
    reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    gpus = []
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        pci = nv.nvmlDeviceGetPciInfo(h)
        rows = _call(nv.nvmlDeviceGetRemappedRows, h)
        mask = _call(reasons_fn, h) if reasons_fn else None
        links = []
        for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
            state = _call(nv.nvmlDeviceGetNvLinkState, h, link)
            if state is not None:
                links.append(NvLink(link=link, active=bool(state)))
        mem = _call(nv.nvmlDeviceGetMemoryInfo, h)
        power = _call(nv.nvmlDeviceGetPowerUsage, h)
        ecc = _call(nv.nvmlDeviceGetEccMode, h)
        errors = nv.nvmlDeviceGetTotalEccErrors
        temp = _call(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        uuid, name, vbios = (_call(f, h) for f in (nv.nvmlDeviceGetUUID, nv.nvmlDeviceGetName,
                                                    nv.nvmlDeviceGetVbiosVersion))
        gpus.append(GpuDetail(
            address=normalise(_text(pci.busId)),
            index=i,
            uuid=_text(uuid) if uuid is not None else None,
            name=_text(name) if name is not None else None,
            vbios=_text(vbios) if vbios is not None else None,
            memory_mib=mem.total // (1024 * 1024) if mem is not None else None,
            ecc_enabled=bool(ecc[0]) if ecc else None,
            ecc_corrected_volatile=_call(errors, h, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                         nv.NVML_VOLATILE_ECC),
            ecc_uncorrected_volatile=_call(errors, h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                           nv.NVML_VOLATILE_ECC),
            ecc_uncorrected_aggregate=_call(errors, h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                            nv.NVML_AGGREGATE_ECC),
            remapped_rows=RemappedRows(correctable=rows[0], uncorrectable=rows[1],
                                       pending=bool(rows[2]), failure=bool(rows[3]))
            if rows else None,
            clock_event_reasons=decode_clock_reasons(mask) if mask is not None else [],
            temperature_c=float(temp) if temp is not None else None,
            power_w=power / 1000 if power is not None else None,
            nvlinks=links,
        ))
    return gpus, _text(driver) if driver is not None else None, cuda
