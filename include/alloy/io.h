// Saving and loading arrays: .npy, .safetensors and .gguf (MLX's formats;
// .npz is a zip of .npy files and is written by the Python layer).
//
// Loads are eager: the file is read when load returns. Streams let the
// Python layer hand in the bytes of file objects.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"

namespace alloy {

// ---- .npy (numpy's format; bfloat16 is written as MLX does, as '<V2')
void save(std::ostream& out, const array& a);
// Appends ".npy" when the name has another (or no) extension, as MLX does.
void save(std::string file, const array& a);
array load(std::istream& in, const std::string& source = "stream");
array load(const std::string& file);

// ---- .safetensors
using SafetensorsLoad = std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;
void save_safetensors(std::ostream& out, const std::unordered_map<std::string, array>& arrays,
                      const std::unordered_map<std::string, std::string>& metadata = {});
void save_safetensors(std::string file, const std::unordered_map<std::string, array>& arrays,
                      const std::unordered_map<std::string, std::string>& metadata = {});
SafetensorsLoad load_safetensors(std::istream& in, const std::string& source = "stream");
SafetensorsLoad load_safetensors(const std::string& file);

// ---- .gguf (version 3). Tensors: float32, float16, int8, int16, int32.
// Metadata values: a scalar or 1-D array, a string, or a list of strings.
using GGUFMetaData = std::variant<std::monostate, array, std::string, std::vector<std::string>>;
using GGUFLoad = std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, GGUFMetaData>>;
void save_gguf(std::ostream& out, const std::unordered_map<std::string, array>& arrays,
               const std::unordered_map<std::string, GGUFMetaData>& metadata = {});
void save_gguf(std::string file, const std::unordered_map<std::string, array>& arrays,
               const std::unordered_map<std::string, GGUFMetaData>& metadata = {});
GGUFLoad load_gguf(std::istream& in, const std::string& source = "stream");
GGUFLoad load_gguf(const std::string& file);

}  // namespace alloy
