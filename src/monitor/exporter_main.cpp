// cohort-exporter: the /metrics endpoint of a training node, a small process of its own.
//
// Why a process: civetweb (under prometheus-cpp's Exposer) starts its threads with a fixed
// 100 KiB stack, and glibc refuses such threads in a process whose static TLS is larger than
// that, as a rank's is with LibTorch and Open MPI loaded. A separate process also keeps the
// HTTP server's scheduling and failures away from the training loop.
//
// Protocol (see monitor::HttpExporter): argv is BIND PORT (0: any free port). Standard input and
// output are one socket to the rank. The exporter answers one line, "listening PORT" or
// "error MESSAGE", then reads lines, each a JSON array of gauges [{"n": name, "h": help,
// "l": {label: value}, "v": value}], and serves the latest at /metrics. It ends at end of input
// or when its parent is gone.
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <unistd.h>

#include <CivetServer.h>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

class Latest : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return families_;
  }
  void set(std::vector<prometheus::MetricFamily> families) {
    std::lock_guard<std::mutex> lock(mutex_);
    families_ = std::move(families);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<prometheus::MetricFamily> families_;
};

// Prometheus' own grammar for metric and label names: anything else (a newline, a space) would
// add lines or fields to /metrics.
bool valid_name(const std::string& name, bool colon) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [colon](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':');
  });
}

// One host name or address: letters, digits, '.', '-', ':' and IPv6's brackets. civetweb reads
// commas as more listeners and letters after the port as options, so nothing else passes.
bool valid_bind(const std::string& bind) {
  return !bind.empty() && bind.size() < 256 && std::all_of(bind.begin(), bind.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '[' || c == ']';
  });
}

std::string one_line(std::string text) {
  for (auto& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
}

std::vector<prometheus::MetricFamily> parse(const std::string& line) {
  std::vector<prometheus::MetricFamily> out;
  std::map<std::string, std::size_t> index;
  for (const auto& g : nlohmann::json::parse(line)) {
    const std::string name = g.at("n").get<std::string>();
    if (!valid_name(name, true))
      throw std::invalid_argument("metric name '" + one_line(name) + "'");
    auto it = index.find(name);
    if (it == index.end()) {
      prometheus::MetricFamily family;
      family.name = name;
      family.help = one_line(g.at("h").get<std::string>());
      family.type = prometheus::MetricType::Gauge;
      it = index.emplace(name, out.size()).first;
      out.push_back(std::move(family));
    }
    prometheus::ClientMetric metric;
    for (const auto& [k, v] : g.at("l").items()) {
      if (!valid_name(k, false)) throw std::invalid_argument("label name '" + one_line(k) + "'");
      metric.label.push_back({k, v.get<std::string>()});  // values: escaped by prometheus-cpp
    }
    metric.gauge.value = g.at("v").get<double>();
    out[it->second].metric.push_back(std::move(metric));
  }
  return out;
}

std::string civetweb_error;
int keep_message(const mg_connection*, const char* message) {
  civetweb_error = message;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cout << "error usage: cohort-exporter BIND PORT" << std::endl;
    return 2;
  }
  const std::string port = argv[2];
  if (!valid_bind(argv[1]) || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::cout << "error '" << one_line(argv[1]) << ":" << one_line(port)
              << "' is not one host and port to listen on" << std::endl;
    return 2;
  }
  const pid_t parent = getppid();
  std::unique_ptr<prometheus::Exposer> exposer;
  auto latest = std::make_shared<Latest>();
  try {
    CivetCallbacks callbacks;
    callbacks.log_message = keep_message;
    exposer =
        std::make_unique<prometheus::Exposer>(std::string(argv[1]) + ":" + argv[2], 2, &callbacks);
    exposer->RegisterCollectable(latest);
  } catch (const std::exception& e) {
    std::cout << "error " << (civetweb_error.empty() ? e.what() : civetweb_error) << std::endl;
    return 1;
  }
  std::cout << "listening " << exposer->GetListeningPorts().at(0) << std::endl;
  // The parent's death is seen within a second even if it never closed the socket.
  std::thread([parent] {
    while (getppid() == parent) std::this_thread::sleep_for(std::chrono::seconds(1));
    std::_Exit(0);
  }).detach();
  for (std::string line; std::getline(std::cin, line);) {
    try {
      latest->set(parse(line));
    } catch (const nlohmann::json::exception& e) {
      std::fprintf(stderr, "cohort-exporter: ignoring a malformed update: %s\n", e.what());
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "cohort-exporter: ignoring an update with an invalid %s\n", e.what());
    }
  }
  return 0;
}
