// Data read through a file's description (harness/io/described_file.h: pread and tqref's own chunk
// decoder) equal, byte for byte, to libhdf5's reading of the same file: the committed golden
// files, and layouts tqref does not write but a file from elsewhere may hold (chunks cut along
// every axis with partial edges, chunks larger than the data, unallocated chunks with a fill
// value, big-endian types, contiguous and compact storage, filters in another order, edge chunks
// stored unfiltered).
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "io/hdf5_util.h"

namespace fs = std::filesystem;
namespace h5 = tqref::h5;

namespace {

// Every element of dataset `path` as libhdf5 reads it into the native form of its type.
std::vector<uint8_t> libhdf5_bytes(hid_t file, const std::string& path) {
  h5::Handle d(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  h5::Handle type(H5Dget_type(d.get()), H5Tclose), space(H5Dget_space(d.get()), H5Sclose);
  h5::Handle native(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose);
  std::vector<uint8_t> out(size_t(H5Sget_simple_extent_npoints(space.get())) * H5Tget_size(native.get()));
  BOOST_TEST_REQUIRE(H5Dread(d.get(), native.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0, path);
  return out;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A read of dataset `path` through Node::open_file's description, as its own element type (chosen
// here, with libhdf5; the read itself uses none, so it may run on any thread).
std::function<std::vector<uint8_t>()> read_through_description(const h5::Node& root, hid_t file, const std::string& path) {
  h5::Handle d(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  h5::Handle type(H5Dget_type(d.get()), H5Tclose);
  const size_t size = H5Tget_size(type.get());
  const bool is_float = H5Tget_class(type.get()) == H5T_FLOAT, is_unsigned = H5Tget_sign(type.get()) == H5T_SGN_NONE;
  return [&root, name = path.substr(1), size, is_float, is_unsigned]() -> std::vector<uint8_t> {
    if (is_float) return size == 4 ? as_bytes(root.read<float>(name)) : as_bytes(root.read<double>(name));
    switch (size) {
      case 1: return is_unsigned ? as_bytes(root.read<uint8_t>(name)) : as_bytes(root.read<int8_t>(name));
      case 2: return as_bytes(root.read<uint16_t>(name));
      case 4: return is_unsigned ? as_bytes(root.read<uint32_t>(name)) : as_bytes(root.read<int32_t>(name));
      default: return is_unsigned ? as_bytes(root.read<uint64_t>(name)) : as_bytes(root.read<int64_t>(name));
    }
  };
}

std::vector<uint8_t> described_bytes(const h5::Node& root, hid_t file, const std::string& path) {
  return read_through_description(root, file, path)();
}

herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(data)->push_back("/" + std::string(name));
  return 0;
}

// Every dataset of `file` read both ways; returns how many were compared.
size_t compare_every_dataset(const std::string& file) {
  const h5::Node root = h5::Node::open_file(file);
  h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  std::vector<std::string> paths;
  H5Ovisit2(f.get(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &paths, H5O_INFO_BASIC);
  for (const std::string& p : paths) BOOST_TEST((described_bytes(root, f.get(), p) == libhdf5_bytes(f.get(), p)), file << ":" << p);
  return paths.size();
}

fs::path scratch_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tqref-described-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// A dataset `name` of `dims` in file type `ftype`, elements i * 7919 + 3 (all bytes vary), with
// `dcpl`; `written` (when set) limits the data written to the first that many rows. With
// `unlimited`, the first dimension may grow (another chunk index, and a chunk may exceed the data).
void put_dataset(hid_t f, const char* name, hid_t ftype, std::vector<hsize_t> dims, hid_t dcpl, hsize_t written = 0,
                 bool unlimited = false) {
  std::vector<hsize_t> max = dims;
  if (unlimited) max[0] = H5S_UNLIMITED;
  h5::Handle space(H5Screate_simple(int(dims.size()), dims.data(), max.data()), H5Sclose);
  h5::Handle d(H5Dcreate2(f, name, ftype, space.get(), H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  BOOST_TEST_REQUIRE(d.get() >= 0, name);
  if (written) dims[0] = written;
  const size_t n = std::accumulate(dims.begin(), dims.end(), size_t(1), std::multiplies<>());
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int64_t(i * 7919 + 3);
  h5::Handle mem(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle file_space(H5Dget_space(d.get()), H5Sclose);
  std::vector<hsize_t> start(dims.size(), 0);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(), nullptr);
  BOOST_TEST_REQUIRE(H5Dwrite(d.get(), H5T_NATIVE_INT64, mem.get(), file_space.get(), H5P_DEFAULT, v.data()) >= 0, name);
}

h5::Handle chunked(std::vector<hsize_t> chunk, const std::vector<int>& filters, unsigned opts = 0) {
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data());
  for (int id : filters) {
    if (id == 1) H5Pset_deflate(dcpl.get(), 6);
    if (id == 2) H5Pset_shuffle(dcpl.get());
    if (id == 3) H5Pset_fletcher32(dcpl.get());
  }
  if (opts) H5Pset_chunk_opts(dcpl.get(), opts);
  return dcpl;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(described_read)

// Would catch: a chunk decoded, scattered or converted differently from libhdf5 in the files
// tqref reads most.
BOOST_AUTO_TEST_CASE(committed_golden_files_read_as_libhdf5_reads_them) {
  BOOST_TEST(compare_every_dataset(TQREF_SOURCE_DIR "/data/golden/smoke.h5") > 100u);
  BOOST_TEST(compare_every_dataset(TQREF_SOURCE_DIR "/data/golden/real.h5") > 10u);
}

// Would catch: state shared by the readers of one opened file (a file offset instead of pread, a
// chunk cache, a scratch buffer): conform reads a suite on its modules' thread while the coverage
// summary reads the same opened file on another (gpu/conform_session.cpp). Four threads read every
// dataset of one Node at once, each in another order, and must get libhdf5's bytes.
BOOST_AUTO_TEST_CASE(one_opened_file_read_from_several_threads_at_once) {
  const std::string file = TQREF_SOURCE_DIR "/data/golden/smoke.h5";
  const h5::Node root = h5::Node::open_file(file);
  std::vector<std::string> paths;
  std::vector<std::vector<uint8_t>> want;
  // Per dataset, libhdf5's bytes and a read call of its element type, made here, where libhdf5 may run.
  std::vector<std::function<std::vector<uint8_t>()>> reads;
  {
    h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    H5Ovisit2(f.get(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &paths, H5O_INFO_BASIC);
    for (const std::string& p : paths) {
      want.push_back(libhdf5_bytes(f.get(), p));
      reads.push_back(read_through_description(root, f.get(), p));
    }
  }
  BOOST_TEST_REQUIRE(paths.size() > 100u);
  std::vector<size_t> wrong(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < wrong.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < 3 * paths.size(); ++k) {
        const size_t i = (k * (2 * t + 1) + t * 17) % paths.size();  // another order per thread
        try {
          if (reads[i]() != want[i]) ++wrong[t];
        } catch (const std::exception&) {
          ++wrong[t];
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < wrong.size(); ++t) BOOST_TEST(wrong[t] == 0u, "thread " << t);
}

// Would catch: the scatter of a chunk (edges, runs over trailing dimensions), the fill value of
// unallocated chunks, byte order, the reverse pipeline order and partial edge chunks stored
// unfiltered going wrong in layouts tqref never writes.
BOOST_AUTO_TEST_CASE(layouts_from_elsewhere_read_as_libhdf5_reads_them) {
  const fs::path d = scratch_dir("layouts");
  const std::string file = (d / "layouts.h5").string();
  {
    h5::Handle f(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    put_dataset(f.get(), "edges_2d", H5T_STD_U16LE, {37, 19}, chunked({8, 5}, {2, 1, 3}).get());
    put_dataset(f.get(), "run_3d", H5T_STD_I32BE, {5, 6, 7}, chunked({2, 6, 7}, {2, 1, 3}).get());
    put_dataset(f.get(), "inner_cut_3d", H5T_IEEE_F64BE, {4, 6, 9}, chunked({3, 6, 4}, {3, 2, 1}).get());
    put_dataset(f.get(), "chunk_past_data", H5T_STD_I64LE, {3}, chunked({10}, {1}).get(), 0, true);
    put_dataset(f.get(), "growable_2d", H5T_STD_U16LE, {9, 4}, chunked({2, 3}, {2, 1, 3}).get(), 0, true);
    put_dataset(f.get(), "unfiltered_edges", H5T_STD_U32LE, {10, 3}, chunked({4, 3}, {2, 1, 3}, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS).get());
    put_dataset(f.get(), "no_filters", H5T_STD_I8LE, {33}, chunked({8}, {}).get());
    h5::Handle fill = chunked({4, 4}, {1, 3});
    const int32_t minus7 = -7;
    H5Pset_fill_value(fill.get(), H5T_NATIVE_INT32, &minus7);
    put_dataset(f.get(), "unallocated_fill", H5T_STD_I32LE, {12, 8}, fill.get(), 4);
    put_dataset(f.get(), "contiguous", H5T_IEEE_F32LE, {6, 5}, H5P_DEFAULT);
    h5::Handle compact(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_layout(compact.get(), H5D_COMPACT);
    put_dataset(f.get(), "compact", H5T_STD_U8LE, {40}, compact.get());
  }
  BOOST_TEST(compare_every_dataset(file) == 10u);
  fs::remove_all(d);
}

// Would catch: a changed byte inside a stored chunk read as data instead of refused, or refused
// without naming the dataset and the chunk.
BOOST_AUTO_TEST_CASE(one_changed_byte_in_a_chunk_is_a_checksum_mismatch) {
  const fs::path d = scratch_dir("flip");
  const std::string file = (d / "flip.h5").string();
  haddr_t addr = 0;
  {
    h5::Handle f(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    put_dataset(f.get(), "x", H5T_STD_U16LE, {64, 16}, chunked({16, 16}, {2, 1, 3}).get());
    h5::Handle ds(H5Dopen2(f.get(), "x", H5P_DEFAULT), H5Dclose);
    const hsize_t at[2] = {32, 0};
    unsigned mask = 0;
    hsize_t size = 0;
    BOOST_TEST_REQUIRE(H5Dget_chunk_info_by_coord(ds.get(), at, &mask, &addr, &size) >= 0);
  }
  {
    std::fstream s(file, std::ios::in | std::ios::out | std::ios::binary);
    s.seekg(std::streamoff(addr + 5));
    const char c = char(s.get() ^ 0x10);
    s.seekp(std::streamoff(addr + 5));
    s.put(c);
  }
  std::string refusal;
  try {
    h5::Node::open_file(file).read<uint16_t>("x");
  } catch (const h5::Error& e) {
    refusal = e.what();
  }
  BOOST_TEST(refusal.find("flip.h5:/x: corrupt file: the data cannot be read (chunk 2 of 4") != std::string::npos, refusal);
  BOOST_TEST(refusal.find("checksum mismatch") != std::string::npos, refusal);
  fs::remove_all(d);
}

// Would catch: tqref's own signature test (libhdf5's H5Fis_hdf5 no longer runs in tqref's process)
// missing a file whose HDF5 data starts after a user block, where libhdf5 looks for it too.
BOOST_AUTO_TEST_CASE(signature_after_a_user_block_is_found) {
  const fs::path d = scratch_dir("userblock");
  const std::string file = (d / "userblock.h5").string();
  {
    h5::Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    H5Pset_userblock(fcpl.get(), 1024);
    h5::Handle f(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), H5Fclose);
    put_dataset(f.get(), "x", H5T_STD_U16LE, {20, 3}, chunked({7, 3}, {2, 1, 3}).get());
  }
  BOOST_TEST(compare_every_dataset(file) == 1u);
  fs::remove_all(d);
}

BOOST_AUTO_TEST_SUITE_END()
