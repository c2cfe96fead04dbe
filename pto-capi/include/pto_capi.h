/* The C ABI of pto-op's shape and dtype rules (crate pto-capi).
 *
 * A custom-op package's op_host InferShape/InferDataType call pto_infer, which runs the op's
 * own Rust #[infer_shape]/#[infer_dtype]: the deployed op infers exactly as the traced one.
 * Link libpto_capi.so (cargo build -p pto-capi --release). */
#ifndef PTO_CAPI_H
#define PTO_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank a descriptor holds. */
#define PTO_MAX_RANK 8

/* Status codes. */
#define PTO_OK 0
#define PTO_BAD_ARGUMENT 1    /* null pointer, non-UTF-8 string, rank > PTO_MAX_RANK, unknown dtype */
#define PTO_UNKNOWN_OP 2      /* no linked op of that name */
#define PTO_BAD_ATTRIBUTES 3  /* the attributes JSON does not parse */
#define PTO_REJECTED 4        /* the op's rules refuse the inputs */
#define PTO_OUTPUT_CAPACITY 5 /* the output array is too small; *num_outputs is the count needed */
#define PTO_PANIC 6           /* a bug in the library */

/* One tensor's type: an ONNX TensorProto.DataType code (1 = float, 10 = float16, 6 = int32,
 * 7 = int64, 3 = int8, 2 = uint8, 9 = bool, 16 = bfloat16), the rank, and the dims. */
typedef struct PtoTensorDesc {
    int32_t dtype;
    uint32_t rank;
    int64_t dims[PTO_MAX_RANK];
} PtoTensorDesc;

/* One shape: the rank and the dims. */
typedef struct PtoShape {
    uint32_t rank;
    int64_t dims[PTO_MAX_RANK];
} PtoShape;

/* The output types of op `op_name` ("demo.rms_norm") for `num_inputs` inputs.
 *
 * attrs_json: the call's params, each tagged with its type, e.g.
 *   {"eps":{"f32":1e-06},"causal":{"bool":true},"axes":{"i64s":[0,1]}}
 * (tags: f32 f64 i32 i64 bool string i64s f32s); NULL or "" for none.
 * outputs: room for output_capacity descriptors; *num_outputs receives the op's output count.
 * error: on failure a NUL-terminated message naming the op, input and rule (truncated to
 * error_capacity bytes); may be NULL.
 * Returns PTO_OK or one of the status codes above. */
int32_t pto_infer(const char *op_name, const PtoTensorDesc *inputs, size_t num_inputs,
                  const char *attrs_json, PtoTensorDesc *outputs, size_t output_capacity,
                  size_t *num_outputs, char *error, size_t error_capacity);

/* The output shapes alone, by the op's #[infer_shape] (what GE's InferShape hook asks); the
 * arguments are as pto_infer's, with shapes for descriptors. */
int32_t pto_infer_shapes(const char *op_name, const PtoShape *inputs, size_t num_inputs,
                         const char *attrs_json, PtoShape *outputs, size_t output_capacity,
                         size_t *num_outputs, char *error, size_t error_capacity);

/* The output dtypes alone (ONNX codes), by the op's #[infer_dtype] (what GE's InferDataType
 * hook asks); the arguments are as pto_infer's, with dtype codes for descriptors. */
int32_t pto_infer_dtypes(const char *op_name, const int32_t *inputs, size_t num_inputs,
                         const char *attrs_json, int32_t *outputs, size_t output_capacity,
                         size_t *num_outputs, char *error, size_t error_capacity);

/* The signature fingerprint of op `op_name` (what a package's manifest records).
 * Returns PTO_OK, PTO_BAD_ARGUMENT or PTO_UNKNOWN_OP. */
int32_t pto_op_fingerprint(const char *op_name, uint64_t *fingerprint, char *error,
                           size_t error_capacity);

/* The pto-op version the library was built from, NUL-terminated, static. */
const char *pto_capi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PTO_CAPI_H */
