//! A decoder-only LLM as a Hugging Face `config.json` describes it.

use std::path::Path;

use pto_op::DType;
use serde::Deserialize;

use crate::EstimateError;

/// The parts of a Hugging Face `config.json` that size a decoder-only transformer (Llama,
/// Mistral, Qwen2): widths, heads (grouped-query attention when `num_key_value_heads` is
/// below `num_attention_heads`), layers, vocabulary, tied embeddings and the dtype.
/// Rotary embeddings are assumed (all three families use them); `rope_theta` changes the
/// values, not the work, so it is not read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LlmConfig {
    /// `model_type`: `llama`, `mistral`, `qwen2`, ...
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Hidden units of the gated MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key and value heads (grouped-query attention); absent means one per query head.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Width of one head; absent means `hidden_size / num_attention_heads`.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// Vocabulary.
    pub vocab_size: usize,
    /// Whether the LM head reuses the embedding table (no weight of its own).
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Whether the Q, K and V projections have a bias; absent means as the family has it
    /// (Qwen2: yes, Llama and Mistral: no).
    #[serde(default)]
    pub attention_bias: Option<bool>,
    /// `torch_dtype`: `float16`, `bfloat16` or `float32`.
    #[serde(default = "default_dtype")]
    pub torch_dtype: String,
    /// `rms_norm_eps`.
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// Routed experts of a mixture-of-experts MLP (`num_local_experts` in Mixtral,
    /// `n_routed_experts` in DeepSeek); absent: a dense MLP.
    #[serde(default, alias = "num_local_experts", alias = "n_routed_experts")]
    pub experts: Option<usize>,
    /// Experts each token is routed to.
    #[serde(default)]
    pub num_experts_per_tok: Option<usize>,
    /// Hidden units of one expert (DeepSeek's `moe_intermediate_size`); absent:
    /// `intermediate_size` (Mixtral).
    #[serde(default)]
    pub moe_intermediate_size: Option<usize>,
    /// Experts every token goes through besides the routed ones (DeepSeek), each of
    /// `moe_intermediate_size`.
    #[serde(default)]
    pub n_shared_experts: Option<usize>,
    /// Leading layers with a dense MLP of `intermediate_size` (DeepSeek).
    #[serde(default)]
    pub first_k_dense_replace: Option<usize>,
    /// Multi-head latent attention's compressed KV width (DeepSeek-V2 / V3): not
    /// modelled, so such a config is refused rather than estimated as another attention.
    #[serde(default)]
    pub kv_lora_rank: Option<usize>,
}

fn default_dtype() -> String {
    "float16".to_owned()
}

fn default_eps() -> f64 {
    1e-6
}

impl LlmConfig {
    /// Reads and checks `config.json`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is not such a config, or its sizes do not fit together.
    pub fn load(path: &Path) -> Result<LlmConfig, EstimateError> {
        let text = std::fs::read_to_string(path).map_err(|source| EstimateError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        LlmConfig::parse(&text).map_err(|e| match e {
            EstimateError::Config { message, .. } => EstimateError::Config {
                config: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Parses and checks the text of a `config.json`.
    ///
    /// ```
    /// let c = pto_estimator::llm::LlmConfig::parse(r#"{"model_type": "llama",
    ///   "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    ///   "num_attention_heads": 32, "vocab_size": 32000}"#).unwrap();
    /// assert_eq!((c.kv_heads(), c.head_size()), (32, 128));
    /// ```
    ///
    /// # Errors
    ///
    /// Not JSON of a config, a dtype other than float16 / bfloat16 / float32, or sizes
    /// that do not fit together (heads that do not divide the width, key-value heads that
    /// do not divide the query heads, a zero size).
    pub fn parse(text: &str) -> Result<LlmConfig, EstimateError> {
        let config: LlmConfig = serde_json::from_str(text).map_err(|e| EstimateError::Config {
            config: "config.json".to_owned(),
            message: e.to_string(),
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), EstimateError> {
        let fail = |message: String| {
            Err(EstimateError::Config {
                config: "config.json".to_owned(),
                message,
            })
        };
        let sizes = [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.kv_heads()),
            ("head_dim", self.head_size()),
            ("vocab_size", self.vocab_size),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, size)| *size == 0) {
            return fail(format!("`{name}` is 0; a model needs at least one"));
        }
        if self.head_dim.is_none() && !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return fail(format!(
                "`num_attention_heads` {} does not divide `hidden_size` {}; give `head_dim`",
                self.num_attention_heads, self.hidden_size
            ));
        }
        if !self.num_attention_heads.is_multiple_of(self.kv_heads()) {
            return fail(format!(
                "`num_key_value_heads` {} does not divide `num_attention_heads` {}",
                self.kv_heads(),
                self.num_attention_heads
            ));
        }
        if self.kv_lora_rank.is_some() {
            return fail(
                "multi-head latent attention (`kv_lora_rank`, DeepSeek-V2 / V3) is not \
                 modelled; only its mixture-of-experts MLP is (a config without \
                 `kv_lora_rank` estimates it over grouped-query attention)"
                    .to_owned(),
            );
        }
        if let Some(experts) = self.experts {
            let k = self.num_experts_per_tok.unwrap_or(0);
            if k == 0 || k > experts {
                return fail(format!(
                    "`num_experts_per_tok` is {k}; a mixture of {experts} experts routes \
                     each token to 1 to {experts}"
                ));
            }
        }
        self.dtype().map(|_| ())
    }

    /// Whether layer `layer`'s MLP is a mixture of experts.
    pub fn is_moe_layer(&self, layer: usize) -> bool {
        self.experts.is_some() && layer >= self.first_k_dense_replace.unwrap_or(0)
    }

    /// Hidden units of one expert.
    pub fn expert_size(&self) -> usize {
        self.moe_intermediate_size.unwrap_or(self.intermediate_size)
    }

    /// Key and value heads.
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Width of one head.
    pub fn head_size(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether Q, K and V have a bias.
    pub fn qkv_bias(&self) -> bool {
        self.attention_bias
            .unwrap_or(self.model_type.starts_with("qwen2"))
    }

    /// The dtype of weights, activations and the KV cache.
    ///
    /// # Errors
    ///
    /// A `torch_dtype` other than float16, bfloat16 or float32.
    pub fn dtype(&self) -> Result<DType, EstimateError> {
        match self.torch_dtype.as_str() {
            "float16" | "half" => Ok(DType::F16),
            "bfloat16" => Ok(DType::BF16),
            "float32" | "float" => Ok(DType::F32),
            other => Err(EstimateError::Config {
                config: "config.json".to_owned(),
                message: format!(
                    "`torch_dtype` is `{other}`; expected float16, bfloat16 or float32"
                ),
            }),
        }
    }

    /// Parameters of the model: embeddings, every layer's projections and norms, the final
    /// norm and the LM head unless tied.
    pub fn parameters(&self) -> u64 {
        let (h, i, v) = (
            self.hidden_size as u64,
            self.intermediate_size as u64,
            self.vocab_size as u64,
        );
        let q = (self.num_attention_heads * self.head_size()) as u64;
        let kv = (self.kv_heads() * self.head_size()) as u64;
        let bias = if self.qkv_bias() { q + 2 * kv } else { 0 };
        let attention = h * q + 2 * h * kv + q * h + bias + 2 * h;
        let mlp = |layer: usize| -> u64 {
            if !self.is_moe_layer(layer) {
                return 3 * h * i;
            }
            let (experts, e) = (self.experts.unwrap_or(0) as u64, self.expert_size() as u64);
            let shared = self.n_shared_experts.unwrap_or(0) as u64;
            h * experts + (experts + shared) * 3 * h * e
        };
        let layers: u64 = (0..self.num_hidden_layers)
            .map(|l| attention + mlp(l))
            .sum();
        let head = if self.tie_word_embeddings { 0 } else { v * h };
        v * h + layers + h + head
    }
}
