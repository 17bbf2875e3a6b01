"""What fairseq's Transformer and LightConv models build alike around their stacks: the source and target embeddings
(one matrix with share_all_embeddings), initialised as fairseq does, and the output layer, fairseq's own
(build_output_projection: a Linear without bias, tied to the target embedding or not) or one of frost's heads."""

from torch import nn

from frost_heads import build_head


def build_embeddings(args, src_vocab: int, tgt_vocab: int, padding_idx: int):
    """(encoder embedding, decoder embedding): the same module when args.share_all_embeddings."""
    enc_embed = nn.Embedding(src_vocab, args.encoder_embed_dim, padding_idx=padding_idx)
    if args.share_all_embeddings:
        if src_vocab != tgt_vocab:
            raise ValueError("share_all_embeddings needs one dictionary for source and target")
        dec_embed = enc_embed
    else:
        dec_embed = nn.Embedding(tgt_vocab, args.decoder_embed_dim, padding_idx=padding_idx)
    for embed in {id(enc_embed): enc_embed, id(dec_embed): dec_embed}.values():
        nn.init.normal_(embed.weight, mean=0, std=embed.embedding_dim**-0.5)
        nn.init.zeros_(embed.weight[padding_idx])
    return enc_embed, dec_embed


def build_output_layer(args, dec_embed: nn.Embedding, tgt_vocab: int) -> nn.Module:
    """frost's head `args.frost_head`, or, without one, fairseq's output layer."""
    if args.frost_head:
        return build_head(
            args.frost_head,
            vocab_size=tgt_vocab,
            input_dim=args.decoder_embed_dim,
            embedding_dim=args.decoder_embed_dim,
            seed=args.frost_head_seed,
            options=args.frost_head_options,
        )
    layer = nn.Linear(args.decoder_embed_dim, tgt_vocab, bias=False)
    if args.share_all_embeddings or args.share_decoder_input_output_embed:
        layer.weight = dec_embed.weight
    else:
        nn.init.normal_(layer.weight, mean=0, std=args.decoder_embed_dim**-0.5)
    return layer


def output_logits(decoder: nn.Module, f):
    """Logits of the decoder's output f through its output layer, handing a frost head the embedding it scores."""
    head = decoder.output_projection
    if isinstance(head, nn.Linear):
        return head(f)
    return head(f, decoder.embed_tokens.weight if head.uses_embedding else None)
