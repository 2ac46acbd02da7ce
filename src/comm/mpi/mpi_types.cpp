#include "mpi_types.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <mutex>

#include "cohort/error.hpp"
#include "mpi_check.hpp"

namespace cohort::comm::mpi {
namespace {

template <typename T, typename F>
void reduce16(void* in, void* inout, int* len, F combine) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = T(combine(static_cast<float>(a[i]), static_cast<float>(b[i])));
}

template <typename T>
void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce16<T>(in, inout, len, [](float x, float y) { return x + y; });
}
template <typename T>
void max16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce16<T>(in, inout, len, [](float x, float y) { return std::max(x, y); });
}
template <typename T>
void min16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce16<T>(in, inout, len, [](float x, float y) { return std::min(x, y); });
}

// [bf16, fp16] x [sum, max, min], created once per process (they live until MPI_Finalize).
struct Ops16 {
  MPI_Op ops[2][3];
};

const Ops16& ops16() {
  static Ops16 table;
  static std::once_flag once;
  std::call_once(once, [] {
    COHORT_MPI_CHECK(MPI_Op_create(&sum16<c10::BFloat16>, 1, &table.ops[0][0]));
    COHORT_MPI_CHECK(MPI_Op_create(&max16<c10::BFloat16>, 1, &table.ops[0][1]));
    COHORT_MPI_CHECK(MPI_Op_create(&min16<c10::BFloat16>, 1, &table.ops[0][2]));
    COHORT_MPI_CHECK(MPI_Op_create(&sum16<c10::Half>, 1, &table.ops[1][0]));
    COHORT_MPI_CHECK(MPI_Op_create(&max16<c10::Half>, 1, &table.ops[1][1]));
    COHORT_MPI_CHECK(MPI_Op_create(&min16<c10::Half>, 1, &table.ops[1][2]));
  });
  return table;
}

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return 0;
    case ReduceOp::kMax:
      return 1;
    case ReduceOp::kMin:
      return 2;
  }
  return 0;
}

}  // namespace

MPI_Datatype datatype(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return MPI_FLOAT;
    case c10::ScalarType::Double:
      return MPI_DOUBLE;
    case c10::ScalarType::Long:
      return MPI_INT64_T;
    case c10::ScalarType::Int:
      return MPI_INT32_T;
    case c10::ScalarType::Short:
      return MPI_INT16_T;
    case c10::ScalarType::Char:
      return MPI_INT8_T;
    case c10::ScalarType::Byte:
      return MPI_UINT8_T;
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Half:
      return MPI_UINT16_T;
    default:
      COHORT_THROW(CommError, "the MPI backend does not carry dtype ", type);
  }
}

MPI_Op reduce_op(ReduceOp op, c10::ScalarType type) {
  if (type == c10::ScalarType::BFloat16) return ops16().ops[0][op_index(op)];
  if (type == c10::ScalarType::Half) return ops16().ops[1][op_index(op)];
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

}  // namespace cohort::comm::mpi
