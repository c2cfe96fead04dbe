// Stand-in for CANN's register/op_def_registry.h: the op_host API names a pto-op package
// uses, declarations only (see ../README.md). For -fsyntax-only checks of generated code.
#ifndef PTO_STUB_OP_DEF_REGISTRY_H
#define PTO_STUB_OP_DEF_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
enum DataType {
    DT_FLOAT, DT_FLOAT16, DT_INT8, DT_INT32, DT_UINT8, DT_INT64, DT_BOOL, DT_BF16, DT_UNDEFINED
};
enum Format { FORMAT_ND };
}  // namespace ge

namespace gert {
class Shape {
public:
    size_t GetDimNum() const;
    int64_t GetDim(size_t index) const;
    void SetDimNum(size_t num);
    void SetDim(size_t index, int64_t value);
};
class StorageShape {
public:
    const Shape &GetOriginShape() const;
};
template <typename T>
class TypedContinuousVector {
public:
    size_t GetSize() const;
    const T *GetData() const;
};
class RuntimeAttrs {
public:
    template <typename T>
    const T *GetAttrPointer(size_t index) const;
    const char *GetStr(size_t index) const;
    const TypedContinuousVector<int64_t> *GetListInt(size_t index) const;
    const TypedContinuousVector<float> *GetListFloat(size_t index) const;
};
class InferShapeContext {
public:
    const RuntimeAttrs *GetAttrs() const;
    const Shape *GetInputShape(size_t index) const;
    Shape *GetOutputShape(size_t index);
};
class InferDataTypeContext {
public:
    const RuntimeAttrs *GetAttrs() const;
    ge::DataType GetInputDataType(size_t index) const;
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType dtype);
};
class TilingData {
public:
    size_t GetCapacity() const;
    void *GetData();
    void SetDataSize(size_t size);
};
class TilingContext {
public:
    const RuntimeAttrs *GetAttrs() const;
    const StorageShape *GetInputShape(size_t index) const;
    TilingData *GetRawTilingData();
    // The standard-C++ tiling struct in the raw tiling data (the current template's).
    template <typename T>
    T *GetTilingData();
    ge::graphStatus SetBlockDim(uint32_t block_dim);
    size_t *GetWorkspaceSizes(size_t num);
};
}  // namespace gert

namespace ops {
enum Option { OPTIONAL, REQUIRED };
class OpParamDef {
public:
    OpParamDef &ParamType(Option option);
    OpParamDef &DataType(std::vector<ge::DataType> types);
    OpParamDef &Format(std::vector<ge::Format> formats);
};
class OpAttrDef {
public:
    OpAttrDef &AttrType(Option option);
    OpAttrDef &Float(float value = 0.0f);
    OpAttrDef &Int(int64_t value = 0);
    OpAttrDef &Bool(bool value = false);
    OpAttrDef &String(const char *value = "");
    OpAttrDef &ListInt(std::vector<int64_t> value = {});
    OpAttrDef &ListFloat(std::vector<float> value = {});
};
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext *);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext *);
using TilingFunc = ge::graphStatus (*)(gert::TilingContext *);
class OpAICoreDef {
public:
    OpAICoreDef &SetTiling(TilingFunc func);
    OpAICoreDef &AddConfig(const char *soc);
};
class OpDef {
public:
    explicit OpDef(const char *type);
    OpParamDef &Input(const char *name);
    OpParamDef &Output(const char *name);
    OpAttrDef &Attr(const char *name);
    OpDef &SetInferShape(InferShapeFunc func);
    OpDef &SetInferDataType(InferDataTypeFunc func);
    OpAICoreDef &AICore();
};
}  // namespace ops

#define OP_ADD(name) static ops::name g_pto_stub_op_##name(#name)

#endif
