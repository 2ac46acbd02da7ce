// Whether each node's slurmd answers on its port: the blame a failed step can find at once, where
// the controller flags a lost node only after SlurmdTimeout (300 s by default on a real machine;
// every slurmd must reach the others' ports for Slurm's own message fan-out, so this one does too).
//
// Protocol: unreachable() starts one non-blocking TCP connection to every endpoint together (in
// batches that stay well under the descriptor limit), waits up to `timeout` for them, and tries
// those that failed again after `pause`; an endpoint is unreachable when every try failed: refused
// (nothing listens: slurmd died with the node's processes), no route, or no answer within the
// timeout (a cut link, a powered-off node). What is not the node's doing never blames it: a name
// that does not resolve, a socket this process cannot open. A node whose processes are frozen but
// whose kernel still completes the handshake is reachable here; the controller's flag finds it.
// No Slurm call: the caller takes addresses and ports from slurm_load_node.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::slurm {

struct Endpoint {
  std::string node;     // the name the result gives back
  std::string address;  // NodeAddr: a host name or a numeric address
  std::uint16_t port = 0;
};

struct ProbeOptions {
  std::chrono::milliseconds timeout{1000};  // per try; a LAN handshake takes well under 1 ms
  int tries = 2;                            // a node is blamed only when all of them fail
  std::chrono::milliseconds pause{250};     // between tries
};

// The nodes of `endpoints` that did not answer any try, in the order given.
std::vector<std::string> unreachable(const std::vector<Endpoint>& endpoints,
                                     const ProbeOptions& options = {});

}  // namespace cohort::slurm
