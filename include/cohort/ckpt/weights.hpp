// Named weights from the files users have, for initialising a model (model.init_from): a
// state_dict saved by Python's torch.save, a Cohort export (`cohort ckpt export`, .pt or .h5), or
// a Cohort checkpoint (a checkpoint directory: its newest checkpoint that verifies; or a step
// directory). Every error is one IoError naming the file (exit 3).
//
// torch.save files are read by a restricted unpickler of Cohort's own (torch_pickle.cpp), not
// Python's: it knows dicts (OrderedDict too, its _metadata ignored), lists, tuples, strings,
// numbers and the tensors torch.save writes (torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter over typed storages), and refuses any other global, so no file can make it
// run code. Every storage's bytes are checked against the record that backs them, every tensor's
// extent against its storage, with overflow-checked arithmetic, before anything is allocated.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace cohort::ckpt {

struct NamedWeights {
  std::string source;                                       // the file, or the step directory read
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // in the file's order
};

NamedWeights read_weights(const std::string& path);

// The tensors of a torch.save zip file whose pickle is a dict of tensors, or a dict with such a
// dict under "state_dict" or "model" (what training scripts save beside the optimizer).
NamedWeights read_torch_save(const std::string& path);

}  // namespace cohort::ckpt
