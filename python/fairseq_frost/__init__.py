"""frost's heads in fairseq, as a --user-dir extension:

  fairseq-train data-bin/iwslt14.de-en --user-dir python/fairseq_frost \\
      --arch frost_transformer_iwslt_de_en --frost-head fixed-l2 --frost-head-seed 1 ...

Untested: fairseq is not installable where frost is developed (no PyPI), so this file is only
parsed by frost's tests (test/pytorch-heads.test.ts); the heads it builds are the ones that test
checks against frost. It follows fairseq's TransformerModel / TransformerDecoder (fairseq 0.12).

fairseq imports a --user-dir as a top-level module with its parent folder (python/) on sys.path,
which is where frost_heads lives too.
"""

import json

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerDecoder,
    TransformerModel,
    base_architecture,
    transformer_iwslt_de_en,
)

from frost_heads import HEADS, build_head


class FrostDecoder(TransformerDecoder):
    """fairseq's Transformer decoder with a frost head as its output layer.

    The head is passed as fairseq's `output_projection`, so fairseq builds no nn.Linear of its
    own; output_layer hands it the decoder's embed_tokens for the heads that score against E,
    which keeps one matrix for the input lookup and the output layer.
    """

    def __init__(self, args, dictionary, embed_tokens, head, no_encoder_attn=False):
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn, output_projection=head)

    def output_layer(self, features):
        head = self.output_projection
        return head(features, self.embed_tokens.weight if head.uses_embedding else None)

    def upgrade_state_dict_named(self, state_dict, name):
        state_dict = super().upgrade_state_dict_named(state_dict, name)
        # With shared embeddings fairseq copies E into output_projection.weight for its own tied
        # layer; a frost head has no such parameter, and a strict load would refuse the key.
        state_dict.pop(f"{name}.output_projection.weight", None)
        return state_dict


@register_model("frost_transformer")
class FrostTransformerModel(TransformerModel):
    """fairseq's Transformer, its output layer one of frost's heads (`--frost-head`)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--frost-head", choices=list(HEADS), help="frost's output head")
        parser.add_argument("--frost-head-seed", type=int, metavar="N", help="seed of the head (its frozen matrix)")
        parser.add_argument(
            "--frost-head-options", metavar="JSON", help='the head\'s options as in frost, e.g. \'{"limit": 10}\''
        )

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        # fairseq passes its TransformerConfig here, not the namespace: it copies the namespace's extra arguments
        # (--frost-*) onto it, and reads decoder_output_dim as decoder.output_dim.
        head = build_head(
            args.frost_head,
            vocab_size=len(tgt_dict),
            input_dim=args.decoder_output_dim,
            embedding_dim=embed_tokens.embedding_dim,
            seed=args.frost_head_seed,
            options=json.loads(args.frost_head_options or "{}"),
        )
        return FrostDecoder(
            args, tgt_dict, embed_tokens, head, no_encoder_attn=getattr(args, "no_cross_attention", False)
        )


def frost_defaults(args):
    if getattr(args, "frost_head", None) is None:
        args.frost_head = "fixed-l2"
    if getattr(args, "frost_head_seed", None) is None:
        args.frost_head_seed = 1
    args.frost_head_options = getattr(args, "frost_head_options", None)


@register_model_architecture("frost_transformer", "frost_transformer")
def frost_transformer(args):
    frost_defaults(args)
    base_architecture(args)


@register_model_architecture("frost_transformer", "frost_transformer_iwslt_de_en")
def frost_transformer_iwslt(args):
    frost_defaults(args)
    transformer_iwslt_de_en(args)
