// Attributes as h5py writes them: strings variable-length UTF-8 (fixed-length read too), numbers
// as scalars or 1-D arrays of any numeric type (read converted to double).
#include <cstdlib>
#include <utility>

#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::io::h5 {
namespace {

// "file: attribute 'name'", the prefix of an attribute's messages.
std::string attribute_what(const std::string& where, const std::string& name) {
  return where + ": attribute '" + name + "'";
}

// read(attribute, type, what) on an existing attribute, under the HDF5 lock; nullopt when the
// object has none of that name. The reader takes plain references, which COHORT_H5_CHECK's
// lambda may capture (C++17 lets no lambda capture a structured binding: GCC accepts it, clang
// refuses).
template <typename Read>
auto read_attribute(hid_t object, const std::string& name, const std::string& where, Read&& read)
    -> std::optional<decltype(read(std::declval<const Hid&>(), std::declval<const Hid&>(),
                                   std::declval<const std::string&>()))> {
  auto lock = h5_lock();
  const std::string what = attribute_what(where, name);
  if (COHORT_H5_CHECK(H5Aexists(object, name.c_str()), what) == 0) return std::nullopt;
  const Hid attribute(COHORT_H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT), what));
  const Hid type(COHORT_H5_CHECK(H5Aget_type(attribute.get()), what));
  return read(attribute, type, what);
}

// A new attribute (replacing one of the same name) and its message prefix.
Hid create_attribute(hid_t object, const std::string& name, hid_t type, hid_t space,
                     std::string& what, const std::string& where) {
  what = attribute_what(where, name);
  if (COHORT_H5_CHECK(H5Aexists(object, name.c_str()), what) > 0) {
    COHORT_H5_CHECK(H5Adelete(object, name.c_str()), what);
  }
  return Hid(COHORT_H5_CHECK(
      H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), what));
}

}  // namespace

std::optional<std::string> read_string_attribute(hid_t object, const std::string& name,
                                                 const std::string& where) {
  return read_attribute(
      object, name, where,
      [](const Hid& attribute, const Hid& type, const std::string& what) -> std::string {
        COHORT_CHECK(H5Tget_class(type.get()) == H5T_STRING, IoError, what, ": not a string");
        if (H5Tis_variable_str(type.get()) > 0) {
          Hid mem(COHORT_H5_CHECK(H5Tcopy(H5T_C_S1), what));
          COHORT_H5_CHECK(H5Tset_size(mem.get(), H5T_VARIABLE), what);
          COHORT_H5_CHECK(H5Tset_cset(mem.get(), H5Tget_cset(type.get())), what);
          char* text = nullptr;
          COHORT_H5_CHECK(H5Aread(attribute.get(), mem.get(), &text), what);
          std::string value = text ? text : "";
          H5free_memory(text);
          return value;
        }
        const std::size_t size = H5Tget_size(type.get());
        std::string value(size, '\0');
        COHORT_H5_CHECK(H5Aread(attribute.get(), type.get(), value.data()), what);
        value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
        return value;
      });
}

std::optional<std::vector<double>> read_number_attribute(hid_t object, const std::string& name,
                                                         const std::string& where) {
  return read_attribute(
      object, name, where, [](const Hid& attribute, const Hid& type, const std::string& what) {
        const H5T_class_t type_class = H5Tget_class(type.get());
        COHORT_CHECK(type_class == H5T_INTEGER || type_class == H5T_FLOAT, IoError, what,
                     ": not a number");
        Hid space(COHORT_H5_CHECK(H5Aget_space(attribute.get()), what));
        const hssize_t count = COHORT_H5_CHECK(H5Sget_simple_extent_npoints(space.get()), what);
        std::vector<double> values(static_cast<std::size_t>(count));
        if (count > 0) {
          COHORT_H5_CHECK(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, values.data()), what);
        }
        return values;
      });
}

void write_attribute(hid_t object, const std::string& name, const std::string& value,
                     const std::string& where) {
  auto lock = h5_lock();
  Hid type(COHORT_H5_CHECK(H5Tcopy(H5T_C_S1), where));
  COHORT_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE), where);
  COHORT_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8), where);
  Hid space(COHORT_H5_CHECK(H5Screate(H5S_SCALAR), where));
  std::string what;
  Hid attribute = create_attribute(object, name, type.get(), space.get(), what, where);
  const char* text = value.c_str();
  COHORT_H5_CHECK(H5Awrite(attribute.get(), type.get(), &text), what);
}

void write_attribute(hid_t object, const std::string& name, const std::vector<double>& values,
                     const std::string& where) {
  auto lock = h5_lock();
  const hsize_t count = values.size();
  Hid space(COHORT_H5_CHECK(H5Screate_simple(1, &count, nullptr), where));
  std::string what;
  Hid attribute = create_attribute(object, name, H5T_IEEE_F64LE, space.get(), what, where);
  COHORT_H5_CHECK(H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, values.data()), what);
}

void write_attribute(hid_t object, const std::string& name, std::int64_t value,
                     const std::string& where) {
  auto lock = h5_lock();
  Hid space(COHORT_H5_CHECK(H5Screate(H5S_SCALAR), where));
  std::string what;
  Hid attribute = create_attribute(object, name, H5T_STD_I64LE, space.get(), what, where);
  COHORT_H5_CHECK(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), what);
}

}  // namespace cohort::io::h5
