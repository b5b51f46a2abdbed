# Two Cairn clusters described with the official AWS provider, pointed at
# cairnd's ElastiCache-compatible endpoint (docs/elasticache.md). With the
# demo running:
#
#   . var/demo.env
#   terraform -chdir=docs/terraform/aws init
#   terraform -chdir=docs/terraform/aws apply
#
# The credentials are a Cairn API token's (AWS_ACCESS_KEY_ID: its id,
# AWS_SECRET_ACCESS_KEY: its secret part); var/demo.env sets them.

terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.100"
    }
  }
}

variable "cairn_elasticache_endpoint" {
  description = "cairnd's address, where it answers the ElastiCache API (CAIRN_ELASTICACHE_URL)"
  type        = string
}

variable "region" {
  description = "Any region name: Cairn puts it in ARNs and nowhere else"
  type        = string
  default     = "us-east-1"
}

variable "engine" {
  description = "redis or valkey; changing it (with engine_version) upgrades in place"
  type        = string
  default     = "redis"
}

variable "engine_version" {
  type    = string
  default = "7.0"
}

variable "node_type" {
  type    = string
  default = "cache.t3.micro"
}

variable "shards" {
  description = "sessions' shards; changing it moves hash slots online"
  type        = number
  default     = 3
}

provider "aws" {
  region                      = var.region
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true

  endpoints {
    elasticache = var.cairn_elasticache_endpoint
  }
}

# Cluster mode: three shards (var.shards) of a primary and a replica.
resource "aws_elasticache_replication_group" "sessions" {
  replication_group_id       = "sessions"
  description                = "session store"
  engine                     = var.engine
  engine_version             = var.engine_version
  node_type                  = var.node_type
  cluster_mode               = "enabled"
  num_node_groups            = var.shards
  replicas_per_node_group    = 1
  automatic_failover_enabled = true
  multi_az_enabled           = true
  maintenance_window         = "sun:05:00-sun:06:00"
  apply_immediately          = true

  tags = {
    team = "payments"
  }
}

# Cluster mode disabled: a primary and two replicas.
resource "aws_elasticache_replication_group" "catalog" {
  replication_group_id       = "catalog"
  description                = "product catalog cache"
  engine                     = var.engine
  engine_version             = var.engine_version
  node_type                  = var.node_type
  num_cache_clusters         = 3
  automatic_failover_enabled = true
  apply_immediately          = true
}

output "sessions_configuration_endpoint" {
  value = aws_elasticache_replication_group.sessions.configuration_endpoint_address
}

output "catalog_primary_endpoint" {
  value = aws_elasticache_replication_group.catalog.primary_endpoint_address
}
