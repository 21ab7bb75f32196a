// The metric table (which Prometheus names the hub keeps, and where), topic and reason
// names, and the ingest report's JSON.
#include "loom/telemetry/metric_table.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "hub_state.hpp"
#include "loom/telemetry/link_health_words.hpp"

namespace loom::telemetry {

const std::unordered_map<std::string_view, detail::MetricInfo, NameHash, std::equal_to<>>&
detail::metricTable() {
    static const auto table = [] {
        std::unordered_map<std::string_view, detail::MetricInfo, NameHash, std::equal_to<>> t;
        auto gpu = [&](std::string_view n, GpuField f) {
            t[n] = {detail::MetricInfo::Gpu, static_cast<std::uint8_t>(f)};
        };
        auto port = [&](std::string_view n, PortCounter c, double scale = 1) {
            t[n] = {detail::MetricInfo::Port, static_cast<std::uint8_t>(c), scale};
        };
        gpu("DCGM_FI_DEV_GPU_UTIL", GpuField::Util);
        gpu("DCGM_FI_DEV_GPU_TEMP", GpuField::Temp);
        gpu("DCGM_FI_DEV_MEMORY_TEMP", GpuField::MemTemp);
        gpu("DCGM_FI_DEV_POWER_USAGE", GpuField::Power);
        gpu("DCGM_FI_DEV_SM_CLOCK", GpuField::SmClock);
        gpu("DCGM_FI_DEV_MEM_CLOCK", GpuField::MemClock);
        gpu("DCGM_FI_DEV_FB_USED", GpuField::FbUsed);
        gpu("DCGM_FI_DEV_FB_FREE", GpuField::FbFree);
        gpu("DCGM_FI_DEV_XID_ERRORS", GpuField::Xid);
        gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", GpuField::EccSbe);
        gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GpuField::EccDbe);
        gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE", GpuField::RowRemapFailure);
        gpu("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", GpuField::UncorrectableRemappedRows);
        gpu("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", GpuField::CorrectableRemappedRows);
        gpu("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GpuField::NvlinkCrc);
        gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GpuField::PcieReplay);
        gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GpuField::Energy);
        gpu("DCGM_FI_DEV_MEM_COPY_UTIL", GpuField::MemCopyUtil);
        gpu("DCGM_FI_PROF_GR_ENGINE_ACTIVE", GpuField::GrEngineActive);
        gpu("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GpuField::TensorActive);
        gpu("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GpuField::ClockEventReasons);
        gpu("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", GpuField::ClockEventReasons);  // before DCGM 3.3
        gpu("DCGM_FI_DEV_POWER_VIOLATION", GpuField::PowerViolation);
        gpu("DCGM_FI_DEV_THERMAL_VIOLATION", GpuField::ThermalViolation);
        gpu("DCGM_FI_PROF_SM_ACTIVE", GpuField::SmActive);
        gpu("DCGM_FI_PROF_DRAM_ACTIVE", GpuField::DramActive);
        gpu("DCGM_FI_PROF_PCIE_TX_BYTES", GpuField::PcieTxBytes);
        gpu("DCGM_FI_PROF_PCIE_RX_BYTES", GpuField::PcieRxBytes);
        gpu("DCGM_FI_PROF_NVLINK_TX_BYTES", GpuField::NvlinkTxBytes);
        gpu("DCGM_FI_PROF_NVLINK_RX_BYTES", GpuField::NvlinkRxBytes);
        // node_exporter 1.5's InfiniBand collector (ConnectX ports, InfiniBand and RoCE alike).
        t["node_infiniband_info"] = {detail::MetricInfo::Nic, detail::kNicInfo};
        t["node_infiniband_state_id"] = {detail::MetricInfo::Nic, detail::kNicStateId};
        t["node_infiniband_link_downed_total"] = {detail::MetricInfo::Nic, detail::kNicLinkDowned};
        t["node_infiniband_port_data_received_bytes_total"] = {detail::MetricInfo::Nic,
                                                               detail::kNicRxBytes};
        t["node_infiniband_port_data_transmitted_bytes_total"] = {detail::MetricInfo::Nic,
                                                                  detail::kNicTxBytes};
        t["node_infiniband_port_transmit_wait_total"] = {detail::MetricInfo::Nic,
                                                         detail::kNicXmitWait};
        t["node_infiniband_port_errors_received_total"] = {detail::MetricInfo::Nic,
                                                           detail::kNicRcvErrors};
        t["node_infiniband_link_error_recovery_total"] = {detail::MetricInfo::Nic,
                                                          detail::kNicErrRecovery};
        t["node_infiniband_rate_bytes_per_second"] = {detail::MetricInfo::Nic,
                                                      detail::kNicRateBytes};
        port("loom_port_oper_status", PortCounter::OperStatus);
        port("loom_port_in_octets_total", PortCounter::InOctets);
        port("loom_port_out_octets_total", PortCounter::OutOctets);
        port("loom_port_in_packets_total", PortCounter::InPackets);
        port("loom_port_out_packets_total", PortCounter::OutPackets);
        port("loom_port_in_errors_total", PortCounter::InErrors);
        port("loom_port_out_errors_total", PortCounter::OutErrors);
        port("loom_port_in_discards_total", PortCounter::InDiscards);
        port("loom_port_out_discards_total", PortCounter::OutDiscards);
        port("loom_port_in_pfc_pause_frames_total", PortCounter::InPfcPause);
        port("loom_port_out_pfc_pause_frames_total", PortCounter::OutPfcPause);
        port("loom_port_fec_uncorrectable_total", PortCounter::FecUncorrectable);
        port("loom_port_speed_bps", PortCounter::SpeedBps);
        port("ifOperStatus", PortCounter::OperStatus);
        t["ifAdminStatus"] = {detail::MetricInfo::Port, detail::kPortAdminStatus};
        t["loom_port_admin_status"] = {detail::MetricInfo::Port, detail::kPortAdminStatus};
        port("ifHCInOctets", PortCounter::InOctets);
        port("ifHCOutOctets", PortCounter::OutOctets);
        port("ifHCInUcastPkts", PortCounter::InPackets);
        port("ifHCOutUcastPkts", PortCounter::OutPackets);
        port("ifInErrors", PortCounter::InErrors);
        port("ifOutErrors", PortCounter::OutErrors);
        port("ifInDiscards", PortCounter::InDiscards);
        port("ifOutDiscards", PortCounter::OutDiscards);
        port("ifHighSpeed", PortCounter::SpeedBps, 1e6);
        return t;
    }();
    return table;
}

std::vector<MetricName> metricNames() {
    std::vector<MetricName> out;
    for (const auto& [name, info] : detail::metricTable()) {
        std::string_view source = "loom";
        if (info.type == detail::MetricInfo::Gpu)
            source = "dcgm";
        else if (info.type == detail::MetricInfo::Nic)
            source = "node";
        else if (name.starts_with("if"))
            source = "snmp";
        out.push_back({name, source});
    }
    std::sort(out.begin(), out.end(),
              [](const MetricName& a, const MetricName& b) { return a.name < b.name; });
    return out;
}

std::vector<std::string> clockEventReasonNames(std::uint32_t mask) {
    std::vector<std::string> out;
    for (const auto& r : kClockEventReasons) {
        if (!(mask & r.bit)) continue;
        out.emplace_back(r.name);
        mask &= ~r.bit;
    }
    for (std::uint32_t bit = 1; mask != 0 && bit != 0; bit <<= 1) {
        if (!(mask & bit)) continue;
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%x", bit);
        out.emplace_back(buf);
        mask &= ~bit;
    }
    return out;
}

std::string_view linkHealthWord(std::uint8_t value) {
    static constexpr std::string_view kWords[] = {"up", "degraded", "down", "drained",
                                                  "not in service"};
    return value < std::size(kWords) ? kWords[value] : std::string_view("no data");
}

std::optional<std::uint8_t> parseLinkHealthWord(std::string_view word) {
    if (word == "ok") return kLinkUp;
    if (word == "failed") return kLinkDown;
    if (word == "no data") return kNoData;
    for (std::uint8_t v = 0; v <= kLinkNotInService; ++v)
        if (linkHealthWord(v) == word) return v;
    return std::nullopt;
}

std::string_view topicName(Topic t) {
    switch (t) {
        case Topic::GpuUtil:
            return "gpu.util";
        case Topic::GpuTemp:
            return "gpu.temp";
        case Topic::GpuHealth:
            return "gpu.health";
        case Topic::LinkUtil:
            return "link.util";
        case Topic::LinkHealth:
            return "link.health";
    }
    return "";
}

std::optional<Topic> parseTopic(std::string_view s) {
    for (int i = 0; i < kTopicCount; ++i)
        if (topicName(static_cast<Topic>(i)) == s) return static_cast<Topic>(i);
    return std::nullopt;
}

std::string_view unknownReasonName(UnknownReason r) {
    switch (r) {
        case UnknownReason::UnknownHost:
            return "unknown_host";
        case UnknownReason::UnknownGpu:
            return "unknown_gpu";
        case UnknownReason::UnknownUuid:
            return "unknown_uuid";
        case UnknownReason::UnknownSwitch:
            return "unknown_switch";
        case UnknownReason::UnknownPort:
            return "unknown_port";
        case UnknownReason::MissingLabels:
            return "missing_labels";
        case UnknownReason::NotAPort:
            return "not_a_port";
        case UnknownReason::PortConflict:
            return "port_conflict";
        case UnknownReason::NicIdentity:
            return "nic_identity";
    }
    return "unknown";
}

std::uint64_t IngestReport::unknownTotal() const {
    std::uint64_t n = 0;
    for (auto u : unknown) n += u;
    return n;
}

nlohmann::json IngestReport::toJson() const {
    nlohmann::json unk = nlohmann::json::object();
    for (int i = 0; i < kUnknownReasonCount; ++i)
        if (unknown[i])
            unk[std::string(unknownReasonName(static_cast<UnknownReason>(i)))] = unknown[i];
    nlohmann::json j = {{"samples", samples},
                        {"applied", applied},
                        {"ignored", ignored},
                        {"unknown", std::move(unk)},
                        {"ms", std::round(ms * 1000) / 1000}};
    if (!unknownExamples.empty()) j["unknownExamples"] = unknownExamples;
    if (duplicates) j["duplicates"] = duplicates;
    return j;
}

}  // namespace loom::telemetry
