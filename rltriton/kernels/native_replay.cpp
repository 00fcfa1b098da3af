// The compiled entry point of a repeated call (rltriton.kernels.native).
//
// A training loop calls an estimator with tensors of one signature (shapes, strides, dtypes,
// device) at every update. rltriton records the first call's launch and replays it
// (launch.Replay); in Python the replay's host path is about 17 us on the H200's host: 5 us of
// signature and lookup, 4 us allocating two outputs through torch.empty_like, 8 us of launch.
// This module does the same replay in C++: the signature is read from the tensors' metadata
// and looked up in a table per estimator instance, the outputs are made with the layout
// torch.empty_like gives, and the recorded kernel is launched with cuLaunchKernel, its
// parameters packed once at arming and only the tensors' addresses written per call. A
// time split's two launches and their scratch buffers (segment summaries, made per call) are
// replayed too.
//
// Everything that is not the plain case declines (returns None or False) and the caller takes
// the Python path, which handles it: a tensor not on CUDA, a miss, a launch hook set, no
// current CUDA context in this thread, a tensor the kernel was specialised as 16-byte aligned
// that is not. The table only ever holds what Python armed (native.py checks the parameter
// layout against the driver's cuFuncGetParamInfo before arming).
#include <Python.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/fill.h>
#include <c10/core/GradMode.h>
#include <c10/cuda/CUDAStream.h>
// the driver API's types only (CUlaunchConfig for cuLaunchKernelEx), from the CUDA headers
// Triton ships: nothing is linked, the functions are found at run time
#include <cuda.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

namespace {

// --- the driver, found at run time (as Triton's launcher does: no CUDA toolkit to link) ---
using CUresult = int;
using cuLaunchKernel_t = CUresult (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      void*, void**, void**);
using cuCtxGetCurrent_t = CUresult (*)(void**);
using cuFuncGetParamInfo_t = CUresult (*)(void*, size_t, size_t*, size_t*);
// cuLaunchKernelEx (CUDA >= 12.0): a time split's PHASE 2 launched with programmatic stream
// serialisation, as a programmatic dependent launch (launch._PDL)
using cuLaunchKernelEx_t = CUresult (*)(const ::CUlaunchConfig*, void*, void**, void**);

cuLaunchKernel_t cu_launch = nullptr;
cuLaunchKernelEx_t cu_launch_ex = nullptr;  // null on a driver older than CUDA 12.0: no PDL step arms
cuCtxGetCurrent_t cu_ctx_get_current = nullptr;
cuFuncGetParamInfo_t cu_param_info = nullptr;

bool load_driver() {
  if (cu_launch != nullptr) return true;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) return false;
  cu_launch = reinterpret_cast<cuLaunchKernel_t>(dlsym(h, "cuLaunchKernel"));
  cu_ctx_get_current = reinterpret_cast<cuCtxGetCurrent_t>(dlsym(h, "cuCtxGetCurrent"));
  cu_param_info = reinterpret_cast<cuFuncGetParamInfo_t>(dlsym(h, "cuFuncGetParamInfo"));  // CUDA >= 12.4
  cu_launch_ex = reinterpret_cast<cuLaunchKernelEx_t>(dlsym(h, "cuLaunchKernelEx"));
  if (cu_launch == nullptr || cu_ctx_get_current == nullptr) {
    cu_launch = nullptr;
    return false;
  }
  return true;
}

// Set by configure(): Triton's runtime knobs (their launch hooks); by set_generation: the
// replay generation (launch.clear_caches bumps it).
PyObject* runtime_knobs = nullptr;
long generation = 0;
// set_poison(True): outputs start NaN-filled, as the tests' ``poisoned`` fixture makes the
// Python replay's (an element a kernel leaves unwritten then fails the test)
bool poison = false;

struct Slot {
  int param;  // index in the kernel's parameter list
  int src;    // 0: the call's tensors, 1: its outputs, 2: its scratch buffers
  int index;  // position in that tuple
  bool align;  // specialised as 16-byte aligned: a misaligned address declines
};

// A strong reference to a Python object, released under the GIL (every table operation and
// the table's deallocation run with it held).
struct PyRef {
  PyObject* p = nullptr;
  PyRef() = default;
  explicit PyRef(PyObject* o) : p(o) { Py_XINCREF(p); }
  PyRef(const PyRef& o) : p(o.p) { Py_XINCREF(p); }
  PyRef(PyRef&& o) noexcept : p(o.p) { o.p = nullptr; }
  PyRef& operator=(PyRef o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~PyRef() { Py_XDECREF(p); }
};

struct Step {
  PyRef keep;  // Triton's compiled kernel: its CUfunction stays loaded while the entry lives
  void* function = nullptr;
  unsigned grid_x = 1, grid_y = 1, block = 32, shared = 0;
  bool pdl = false;  // launched with programmatic stream serialisation (cuLaunchKernelEx)
  std::vector<uint64_t> params;  // one 8-byte cell per kernel parameter, the recorded values
  std::vector<Slot> slots;
};

struct Entry {
  long generation = 0;
  std::vector<Step> steps;
  std::vector<int> out_dtypes;  // at::ScalarType, or -1: the first tensor's dtype
  // scratch buffers made afresh for each call, as the Python replay makes them (a time
  // split's segment summaries): (elements, at::ScalarType), contiguous, not poisoned (each
  // element is written before it is read)
  std::vector<std::pair<int64_t, int>> scratch;
};

// The signature of a call, as CreditAssigner._replay's Python key holds it: time_dim and
// backend as given, grad mode, and each tensor's shape, strides, dtype, device and grad flag
// (None kept as a marker); and the current CUDA device, whose context and stream a launch
// takes (a call made under another current device misses and takes the Python path). Returns false where the call is not a native one (a tensor not on
// CUDA, an argument that is not a tensor or None): the Python path decides those.
bool signature(PyObject* tensors, PyObject* time_dim, PyObject* backend, std::string& key,
               std::vector<const at::Tensor*>& ts) {
  Py_ssize_t n = PyTuple_GET_SIZE(tensors);
  key.reserve(64 + 40 * n);
  int64_t head[3];
  if (time_dim == Py_None) {
    head[0] = INT64_MIN;
  } else if (PyLong_CheckExact(time_dim)) {
    int overflow = 0;
    head[0] = PyLong_AsLongLongAndOverflow(time_dim, &overflow);
    if (overflow != 0 || head[0] == INT64_MIN) return false;
  } else {
    return false;
  }
  head[1] = c10::GradMode::is_enabled() ? 1 : 0;
  if (backend == Py_None) {
    head[2] = -1;
  } else if (PyUnicode_CheckExact(backend)) {
    head[2] = PyUnicode_GET_LENGTH(backend);
  } else {
    return false;
  }
  key.append(reinterpret_cast<const char*>(head), sizeof(head));
  if (backend != Py_None) {
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(backend, &len);
    if (s == nullptr) {
      PyErr_Clear();
      return false;
    }
    key.append(s, static_cast<size_t>(len));
  }
  ts.assign(static_cast<size_t>(n), nullptr);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* o = PyTuple_GET_ITEM(tensors, i);
    if (o == Py_None) {
      if (i == 0) return false;
      key.push_back('N');
      continue;
    }
    if (!THPVariable_Check(o)) return false;
    const at::Tensor& t = THPVariable_Unpack(o);
    if (!t.is_cuda()) return false;
    ts[static_cast<size_t>(i)] = &t;
    int64_t d = t.dim();
    int64_t meta[4] = {d, static_cast<int64_t>(t.scalar_type()), t.get_device(), t.requires_grad() ? 1 : 0};
    key.push_back('T');
    key.append(reinterpret_cast<const char*>(meta), sizeof(meta));
    key.append(reinterpret_cast<const char*>(t.sizes().data()), sizeof(int64_t) * static_cast<size_t>(d));
    key.append(reinterpret_cast<const char*>(t.strides().data()), sizeof(int64_t) * static_cast<size_t>(d));
  }
  // asked only now that the tensors are known to be on CUDA (without it, it throws)
  int64_t current = static_cast<int64_t>(c10::cuda::current_device());
  key.append(reinterpret_cast<const char*>(&current), sizeof(current));
  return true;
}

// Whether a Triton launch hook is set (launch._live_hook): None, or a hook chain with no hook
// in it, is not; anything else is, and the Python path calls it.
PyObject* name_enter = nullptr;  // interned attribute names (set at module init)
PyObject* name_exit = nullptr;
PyObject* name_calls = nullptr;

bool hook_live(PyObject* name) {
  PyObject* hook = PyObject_GetAttr(runtime_knobs, name);
  if (hook == nullptr) {
    PyErr_Clear();
    return true;
  }
  bool live = false;
  if (hook != Py_None) {
    PyObject* calls = PyObject_GetAttr(hook, name_calls);
    if (calls == nullptr) {
      PyErr_Clear();
      live = true;
    } else {
      int truth = PyObject_IsTrue(calls);
      if (truth < 0) PyErr_Clear();
      live = truth != 0;
      Py_DECREF(calls);
    }
  }
  Py_DECREF(hook);
  return live;
}

struct TableObject {
  PyObject_HEAD
  std::unordered_map<std::string, Entry>* entries;
};

void table_dealloc(PyObject* self) {
  delete reinterpret_cast<TableObject*>(self)->entries;
  Py_TYPE(self)->tp_free(self);
}

PyObject* table_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self != nullptr) reinterpret_cast<TableObject*>(self)->entries = new std::unordered_map<std::string, Entry>();
  return self;
}

// Table.call(tensors, time_dim, backend[, result]): the outputs of the recorded launches with
// these tensors, None on a miss, False where an entry exists but this call declines it. The
// outputs come as a tuple (result None or left out), as an instance of result (a tuple
// subclass: the estimator's named result), or the first output alone (result 1: the
// estimators of one output), so the functional API returns what the C++ call gives.
PyObject* table_call_impl(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if ((nargs != 3 && nargs != 4) || !PyTuple_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "Table.call: expected (tensors: tuple, time_dim, backend[, result])");
    return nullptr;
  }
  PyObject* result_as = nargs == 4 ? args[3] : Py_None;
  if (!(result_as == Py_None || PyLong_CheckExact(result_as) ||
        (PyType_Check(result_as) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(result_as), &PyTuple_Type)))) {
    PyErr_SetString(PyExc_TypeError, "Table.call: result is None, 1 or a tuple subclass");
    return nullptr;
  }
  auto* entries = reinterpret_cast<TableObject*>(self)->entries;
  if (entries->empty()) Py_RETURN_NONE;
  std::string key;
  std::vector<const at::Tensor*> ts;
  if (!signature(args[0], args[1], args[2], key, ts)) Py_RETURN_NONE;
  auto it = entries->find(key);
  if (it == entries->end()) Py_RETURN_NONE;
  const Entry& e = it->second;
  if (e.generation != generation) {
    entries->erase(it);
    Py_RETURN_NONE;
  }
  if (runtime_knobs != nullptr && (hook_live(name_enter) || hook_live(name_exit))) Py_RETURN_FALSE;
  void* ctx = nullptr;
  if (cu_ctx_get_current(&ctx) != 0 || ctx == nullptr) Py_RETURN_FALSE;
  for (const Step& s : e.steps)
    for (const Slot& sl : s.slots)
      if (sl.src == 0 && sl.align && (reinterpret_cast<uintptr_t>(ts[sl.index]->const_data_ptr()) & 15u) != 0)
        Py_RETURN_FALSE;

  // the current stream of the current device, as the Python launch takes it
  // (torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice()))
  void* stream = reinterpret_cast<void*>(c10::cuda::getCurrentCUDAStream().stream());

  // the outputs as empty_like(tensors[0]) makes them: launch.Replay.build arms a replay only
  // where they came out with tensors[0]'s shape and strides, so empty_strided with those
  // strides is the same layout, one dispatch instead of empty_like's two
  const at::Tensor& like = *ts[0];
  std::vector<at::Tensor> outs;
  outs.reserve(e.out_dtypes.size());
  for (int d : e.out_dtypes) {
    at::TensorOptions opt = like.options();
    if (d >= 0) opt = opt.dtype(static_cast<at::ScalarType>(d));
    outs.push_back(at::empty_strided(like.sizes(), like.strides(), opt));
  }
  if (poison)
    for (at::Tensor& o : outs) o.fill_(std::numeric_limits<double>::quiet_NaN());
  // held until the launches are queued; the caching allocator keeps their memory for this
  // stream's later work, as torch.empty's buffers in the Python replay
  std::vector<at::Tensor> tmp;
  tmp.reserve(e.scratch.size());
  for (const auto& [numel, dtype] : e.scratch)
    tmp.push_back(at::empty({numel}, like.options().dtype(static_cast<at::ScalarType>(dtype))));

  for (const Step& s : e.steps) {
    std::vector<uint64_t> cells(s.params);
    for (const Slot& sl : s.slots) {
      const at::Tensor& t = sl.src == 0 ? *ts[sl.index] : sl.src == 1 ? outs[sl.index] : tmp[sl.index];
      cells[sl.param] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.const_data_ptr()));
    }
    std::vector<void*> ptrs(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) ptrs[i] = &cells[i];
    CUresult err;
    if (s.pdl) {
      ::CUlaunchAttribute attr{};
      attr.id = ::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr.value.programmaticStreamSerializationAllowed = 1;
      ::CUlaunchConfig cfg{};
      cfg.gridDimX = s.grid_x;
      cfg.gridDimY = s.grid_y;
      cfg.gridDimZ = 1;
      cfg.blockDimX = s.block;
      cfg.blockDimY = 1;
      cfg.blockDimZ = 1;
      cfg.sharedMemBytes = s.shared;
      cfg.hStream = reinterpret_cast<::CUstream>(stream);
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      err = cu_launch_ex(&cfg, s.function, ptrs.data(), nullptr);
    } else {
      err = cu_launch(s.function, s.grid_x, s.grid_y, 1, s.block, 1, 1, s.shared, stream, ptrs.data(), nullptr);
    }
    if (err != 0) {
      PyErr_Format(PyExc_RuntimeError, "rltriton native launch: cuLaunchKernel%s failed with CUDA error %d",
                   s.pdl ? "Ex" : "", err);
      return nullptr;
    }
  }
  PyObject* result = PyTuple_New(static_cast<Py_ssize_t>(outs.size()));
  if (result == nullptr) return nullptr;
  for (size_t i = 0; i < outs.size(); ++i) {
    PyObject* w = THPVariable_Wrap(std::move(outs[i]));
    if (w == nullptr) {
      Py_DECREF(result);
      return nullptr;
    }
    PyTuple_SET_ITEM(result, static_cast<Py_ssize_t>(i), w);
  }
  if (result_as == Py_None) return result;
  if (PyLong_CheckExact(result_as)) {
    PyObject* first = PyTuple_GET_ITEM(result, 0);
    Py_INCREF(first);
    Py_DECREF(result);
    return first;
  }
  // tuple.__new__(result_as, result): a named tuple's instance without its Python __new__
  PyObject* targs = PyTuple_Pack(1, result);
  Py_DECREF(result);
  if (targs == nullptr) return nullptr;
  PyObject* named = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(result_as), targs, nullptr);
  Py_DECREF(targs);
  return named;
}

bool as_long(PyObject* o, long long& v) {
  v = PyLong_AsLongLong(o);
  return !(v == -1 && PyErr_Occurred());
}

// Table.add(tensors, time_dim, backend, steps, out_dtypes[, scratch]): arm the signature of
// these tensors. steps: a list of (function, grid_x, grid_y, block, shared, params: bytes of
// one little-endian 8-byte cell per parameter, slots: list of (param, src, index, align), keep:
// the object owning the function, held while the entry lives[, pdl: launch it with
// programmatic stream serialisation]);
// out_dtypes: a list of torch.dtype or None (the first tensor's); scratch: a list of
// (elements, torch.dtype), the buffers each call makes (slots of src 2). Returns whether it
// armed.
PyObject* table_add_impl(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if ((nargs != 5 && nargs != 6) || !PyTuple_Check(args[0]) || !PyList_Check(args[3]) || !PyList_Check(args[4]) ||
      (nargs == 6 && !PyList_Check(args[5]))) {
    PyErr_SetString(PyExc_TypeError, "Table.add: expected (tensors: tuple, time_dim, backend, steps: list, "
                                     "out_dtypes: list[, scratch: list])");
    return nullptr;
  }
  std::string key;
  std::vector<const at::Tensor*> ts;
  if (!signature(args[0], args[1], args[2], key, ts)) Py_RETURN_FALSE;
  Entry e;
  e.generation = generation;
  PyObject* steps = args[3];
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(steps); ++i) {
    PyObject* st = PyList_GET_ITEM(steps, i);
    if (!PyTuple_Check(st) || (PyTuple_GET_SIZE(st) != 8 && PyTuple_GET_SIZE(st) != 9)) {
      PyErr_SetString(PyExc_TypeError,
                      "Table.add: a step is (function, grid_x, grid_y, block, shared, params, slots, keep[, pdl])");
      return nullptr;
    }
    Step s;
    long long v[5];
    for (int k = 0; k < 5; ++k)
      if (!as_long(PyTuple_GET_ITEM(st, k), v[k])) return nullptr;
    s.keep = PyRef(PyTuple_GET_ITEM(st, 7));
    s.function = reinterpret_cast<void*>(static_cast<uintptr_t>(v[0]));
    s.grid_x = static_cast<unsigned>(v[1]);
    s.grid_y = static_cast<unsigned>(v[2]);
    s.block = static_cast<unsigned>(v[3]);
    s.shared = static_cast<unsigned>(v[4]);
    if (PyTuple_GET_SIZE(st) == 9) {
      int pdl = PyObject_IsTrue(PyTuple_GET_ITEM(st, 8));
      if (pdl < 0) return nullptr;
      s.pdl = pdl != 0;
      if (s.pdl && cu_launch_ex == nullptr) Py_RETURN_FALSE;  // (the Python path launches it)
    }
    PyObject* params = PyTuple_GET_ITEM(st, 5);
    PyObject* slots = PyTuple_GET_ITEM(st, 6);
    if (!PyBytes_Check(params) || PyBytes_GET_SIZE(params) % 8 != 0 || !PyList_Check(slots)) {
      PyErr_SetString(PyExc_TypeError, "Table.add: params must be bytes of 8-byte cells, slots a list");
      return nullptr;
    }
    s.params.resize(static_cast<size_t>(PyBytes_GET_SIZE(params) / 8));
    std::memcpy(s.params.data(), PyBytes_AS_STRING(params), static_cast<size_t>(PyBytes_GET_SIZE(params)));
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(slots); ++j) {
      PyObject* sl = PyList_GET_ITEM(slots, j);
      long long w[4];
      if (!PyTuple_Check(sl) || PyTuple_GET_SIZE(sl) != 4) {
        PyErr_SetString(PyExc_TypeError, "Table.add: a slot is (param, src, index, align)");
        return nullptr;
      }
      for (int k = 0; k < 4; ++k)
        if (!as_long(PyTuple_GET_ITEM(sl, k), w[k])) return nullptr;
      Slot slot{static_cast<int>(w[0]), static_cast<int>(w[1]), static_cast<int>(w[2]), w[3] != 0};
      bool ok = slot.param >= 0 && static_cast<size_t>(slot.param) < s.params.size() && slot.index >= 0 &&
                ((slot.src == 0 && slot.index < static_cast<int>(ts.size()) && ts[slot.index] != nullptr) ||
                 slot.src == 1 || slot.src == 2);
      if (!ok) {
        PyErr_SetString(PyExc_ValueError, "Table.add: a slot names no parameter or no tensor of the call");
        return nullptr;
      }
      s.slots.push_back(slot);
    }
    e.steps.push_back(std::move(s));
  }
  PyObject* dts = args[4];
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dts); ++i) {
    PyObject* d = PyList_GET_ITEM(dts, i);
    if (d == Py_None) {
      e.out_dtypes.push_back(-1);
    } else if (THPDtype_Check(d)) {
      e.out_dtypes.push_back(static_cast<int>(reinterpret_cast<THPDtype*>(d)->scalar_type));
    } else {
      PyErr_SetString(PyExc_TypeError, "Table.add: out_dtypes holds torch.dtype or None");
      return nullptr;
    }
  }
  if (nargs == 6) {
    PyObject* sc = args[5];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(sc); ++i) {
      PyObject* b = PyList_GET_ITEM(sc, i);
      long long numel = 0;
      if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != 2 || !THPDtype_Check(PyTuple_GET_ITEM(b, 1))) {
        PyErr_SetString(PyExc_TypeError, "Table.add: a scratch buffer is (elements, torch.dtype)");
        return nullptr;
      }
      if (!as_long(PyTuple_GET_ITEM(b, 0), numel)) return nullptr;
      if (numel < 0) {
        PyErr_SetString(PyExc_ValueError, "Table.add: a scratch buffer of fewer than 0 elements");
        return nullptr;
      }
      e.scratch.emplace_back(static_cast<int64_t>(numel),
                             static_cast<int>(reinterpret_cast<THPDtype*>(PyTuple_GET_ITEM(b, 1))->scalar_type));
    }
  }
  for (const Step& s : e.steps)
    for (const Slot& sl : s.slots) {
      if (sl.src == 1 && sl.index >= static_cast<int>(e.out_dtypes.size())) {
        PyErr_SetString(PyExc_ValueError, "Table.add: a slot names an output the call does not make");
        return nullptr;
      }
      if (sl.src == 2 && sl.index >= static_cast<int>(e.scratch.size())) {
        PyErr_SetString(PyExc_ValueError, "Table.add: a slot names a scratch buffer the call does not make");
        return nullptr;
      }
    }
  auto* entries = reinterpret_cast<TableObject*>(self)->entries;
  if (entries->size() >= 64) entries->clear();  // as CreditAssigner._replays
  (*entries)[key] = std::move(e);
  Py_RETURN_TRUE;
}

// torch's own translation of C++ errors into Python ones (an allocation that fails raises
// torch.OutOfMemoryError, as torch.empty_like would; nothing may escape into Python's C code)
PyObject* table_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  return table_call_impl(self, args, nargs);
  END_HANDLE_TH_ERRORS
}

PyObject* table_add(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  return table_add_impl(self, args, nargs);
  END_HANDLE_TH_ERRORS
}

PyObject* table_clear(PyObject* self, PyObject*) {
  reinterpret_cast<TableObject*>(self)->entries->clear();
  Py_RETURN_NONE;
}

// an empty table: a copied or unpickled estimator arms its own replays again
PyObject* table_reduce(PyObject* self, PyObject*) { return Py_BuildValue("(O())", Py_TYPE(self)); }

Py_ssize_t table_len(PyObject* self) {
  return static_cast<Py_ssize_t>(reinterpret_cast<TableObject*>(self)->entries->size());
}

PyMethodDef table_methods[] = {
    {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(table_call)), METH_FASTCALL,
     "call(tensors, time_dim, backend[, result]) -> the outputs, None (miss) or False (declined)"},
    {"add", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(table_add)), METH_FASTCALL,
     "add(tensors, time_dim, backend, steps, out_dtypes[, scratch]) -> bool"},
    {"clear", table_clear, METH_NOARGS, "forget every entry"},
    {"__reduce__", table_reduce, METH_NOARGS, "pickled and copied as an empty table"},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods table_sequence = {table_len, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr};

PyTypeObject TableType = {PyVarObject_HEAD_INIT(nullptr, 0) "rltriton_native.Table"};

// configure(runtime_knobs): Triton's triton.knobs.runtime (None: no launch hooks to honour)
PyObject* configure(PyObject*, PyObject* arg) {
  if (!load_driver()) {
    PyErr_SetString(PyExc_RuntimeError, "rltriton native: libcuda.so.1 (cuLaunchKernel) not found");
    return nullptr;
  }
  PyObject* old = runtime_knobs;
  if (arg == Py_None) {
    runtime_knobs = nullptr;
  } else {
    Py_INCREF(arg);
    runtime_knobs = arg;
  }
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

PyObject* set_generation(PyObject*, PyObject* arg) {
  long long v = 0;
  if (!as_long(arg, v)) return nullptr;
  generation = static_cast<long>(v);
  Py_RETURN_NONE;
}

PyObject* set_poison(PyObject*, PyObject* arg) {
  int truth = PyObject_IsTrue(arg);
  if (truth < 0) return nullptr;
  poison = truth != 0;
  Py_RETURN_NONE;
}

// param_sizes(function) -> list of each kernel parameter's size in bytes, as the driver
// reports it, or None where the driver cannot (cuFuncGetParamInfo needs CUDA 12.4).
PyObject* param_sizes(PyObject*, PyObject* arg) {
  long long f = 0;
  if (!as_long(arg, f)) return nullptr;
  if (!load_driver() || cu_param_info == nullptr) Py_RETURN_NONE;
  PyObject* out = PyList_New(0);
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < 4096; ++i) {
    size_t off = 0, size = 0;
    if (cu_param_info(reinterpret_cast<void*>(static_cast<uintptr_t>(f)), i, &off, &size) != 0) break;
    PyObject* v = PyLong_FromSize_t(size);
    if (v == nullptr || PyList_Append(out, v) != 0) {
      Py_XDECREF(v);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(v);
  }
  return out;
}

PyMethodDef module_methods[] = {
    {"configure", configure, METH_O, "configure(runtime_knobs)"},
    {"set_generation", set_generation, METH_O, "set_generation(int): entries armed under another are dropped"},
    {"set_poison", set_poison, METH_O, "set_poison(bool): outputs start NaN-filled (tests)"},
    {"param_sizes", param_sizes, METH_O, "param_sizes(function) -> list[int] | None"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "rltriton_native", "rltriton's compiled replay of repeated calls",
                          -1, module_methods};

}  // namespace

PyMODINIT_FUNC PyInit_rltriton_native(void) {
  TableType.tp_basicsize = sizeof(TableObject);
  TableType.tp_flags = Py_TPFLAGS_DEFAULT;
  TableType.tp_new = table_new;
  TableType.tp_dealloc = table_dealloc;
  TableType.tp_methods = table_methods;
  TableType.tp_as_sequence = &table_sequence;
  TableType.tp_doc = "Armed replays of one estimator instance, by call signature.";
  if (PyType_Ready(&TableType) < 0) return nullptr;
  name_enter = PyUnicode_InternFromString("launch_enter_hook");
  name_exit = PyUnicode_InternFromString("launch_exit_hook");
  name_calls = PyUnicode_InternFromString("calls");
  if (name_enter == nullptr || name_exit == nullptr || name_calls == nullptr) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (m == nullptr) return nullptr;
  Py_INCREF(&TableType);
  if (PyModule_AddObject(m, "Table", reinterpret_cast<PyObject*>(&TableType)) < 0) {
    Py_DECREF(&TableType);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
