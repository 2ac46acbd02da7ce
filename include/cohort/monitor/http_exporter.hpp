// HttpExporter: a live Prometheus /metrics endpoint (prometheus-cpp's Exposer, an embedded
// civetweb server) serving the same gauges as the textfile. Bound to 127.0.0.1 by default: the
// training node's port is not open to the network unless monitor.http_bind says so. Port 0 picks
// a free port (port() says which). update() replaces the values: it is called at each summary on
// the trainer's thread while the server's threads read them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cohort/monitor/sinks.hpp"

namespace cohort::monitor {

class HttpExporter {
 public:
  // Throws ConfigError naming monitor.http_port when it cannot listen.
  HttpExporter(const std::string& bind, int port);
  ~HttpExporter();
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  int port() const;
  void update(const std::vector<MetricSample>& samples);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::monitor
