"""docs/kuberay-rayservice.yaml: valid YAML using only fields of KubeRay's RayService CRD
(ray.io/v1, as its own samples use them), a serveConfigV2 Ray Serve's schema takes with
only fields it knows, whose application is ``serve --ray``'s builder and its args."""

from __future__ import annotations

import importlib

import pytest
import yaml

pytest.importorskip("ray.serve")

from ray.serve.schema import DeploymentSchema, ServeApplicationSchema, ServeDeploySchema  # noqa: E402

from pocketcli.serve import rayserve  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402

MANIFEST = ROOT / "docs" / "kuberay-rayservice.yaml"
# KubeRay's RayService (ray.io/v1): the fields the manifest may use, where they go
SPEC = {"serveConfigV2", "rayClusterConfig"}
CLUSTER = {"rayVersion", "enableInTreeAutoscaling", "headGroupSpec", "workerGroupSpecs"}
HEAD = {"rayStartParams", "template", "serviceType"}
WORKERS = {"groupName", "replicas", "minReplicas", "maxReplicas", "rayStartParams", "template"}


def test_the_manifest_is_a_rayservice_of_serve_ray_application() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert (manifest["apiVersion"], manifest["kind"]) == ("ray.io/v1", "RayService")
    assert set(manifest["spec"]) <= SPEC
    cluster = manifest["spec"]["rayClusterConfig"]
    assert set(cluster) <= CLUSTER and set(cluster["headGroupSpec"]) <= HEAD
    for group in cluster["workerGroupSpecs"]:
        assert set(group) <= WORKERS, group
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    config = yaml.safe_load(manifest["spec"]["serveConfigV2"])
    (app,) = ServeDeploySchema.model_validate(config).applications
    (raw,) = config["applications"]
    assert set(raw) <= set(ServeApplicationSchema.model_fields), raw
    for deployment in raw["deployments"]:
        assert set(deployment) <= set(DeploymentSchema.model_fields), deployment
        assert deployment["name"] == "PocketTTS"  # the deployment serve --ray makes
    module, _, name = app.import_path.partition(":")
    assert getattr(importlib.import_module(module), name) is rayserve.build
    known = {*rayserve.BUILD_MODEL, *rayserve.BUILD_LIMITS, *rayserve.BUILD_OTHER}
    assert set(app.args) <= known, app.args
    assert rayserve.Scaling().deployment_options(rayserve.ServeSettings())["name"] == "PocketTTS"
