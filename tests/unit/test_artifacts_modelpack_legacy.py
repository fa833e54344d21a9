"""What modctl v0.2 writes (model-spec v0.0.x "cnai" names) lays out like a ModelPack model."""

from __future__ import annotations

import json

from aiplat.artifacts.modelpack import Manifest, layout

D = "sha256:" + "ab" * 32


def test_modctl_cnai_manifest_is_a_model_with_file_paths() -> None:
    body = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.cnai.model.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cnai.model.config.v1+json", "digest": D,
                   "size": 3},
        "layers": [{"mediaType": "application/vnd.cnai.model.weight.v1.raw", "digest": D,
                    "size": 5, "annotations": {"org.cnai.model.filepath": "w.safetensors"}}],
    }).encode()
    m = Manifest.from_bytes(body)
    assert m.is_model
    assert [rel for _, rel in layout(m, "m")] == ["w.safetensors"]
